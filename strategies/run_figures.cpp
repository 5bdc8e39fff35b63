#include "strategies/run_figures.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/memory.hpp"
#include "strategies/model_math.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/training_cost.hpp"
#include "strategies/training_state.hpp"

namespace cuboid {

std::uint32_t critical_rank(const sim::SimResult& sim) {
    std::uint32_t best = 0;
    for (std::uint32_t r = 1; r < sim.ranks.size(); ++r)
        if (sim.ranks[r].finish > sim.ranks[best].finish) best = r;
    return best;
}

std::span<const BreakdownPart> breakdown_parts() {
    static constexpr BreakdownPart kParts[] = {
        {"compute", "compute", &Breakdown::compute_s},
        {"recompute", "recompute", &Breakdown::recompute_s},
        {"tp_comm_exposed", "tp comm exposed", &Breakdown::tp_comm_exposed_s, true, "tensor"},
        {"cp_comm_exposed", "cp comm exposed", &Breakdown::cp_comm_exposed_s, false, "context"},
        {"ep_comm_exposed", "ep comm exposed", &Breakdown::ep_comm_exposed_s, false, "expert"},
        {"pp_comm_exposed", "pp comm exposed", &Breakdown::pp_comm_exposed_s, true, "pipeline"},
        {"offload_exposed", "offload exposed", &Breakdown::offload_exposed_s, false, "offload"},
        {"dp_comm_exposed", "dp comm exposed", &Breakdown::dp_comm_exposed_s, true, "data"},
        {"bubble", "bubble", &Breakdown::bubble_s},
    };
    return kParts;
}

double Breakdown::*exposed_part(sim::OpCategory comm) {
    // The part whose axis is the class's name: program_streams.cpp names the classes and the
    // table above their parts, so the two cannot drift apart.
    static const std::vector<sim::CommClass> classes = [] {
        sim::Program named;
        name_streams_and_classes(named);
        return named.comm_classes;
    }();
    const auto c = static_cast<std::size_t>(sim::comm_class_of(comm));
    if (c < classes.size()) {
        for (const BreakdownPart& part : breakdown_parts()) {
            if (part.comm_axis != nullptr && classes[c].name == part.comm_axis) return part.seconds;
        }
    }
    throw std::logic_error("exposed_part: category " + std::to_string(static_cast<int>(comm)) +
                           " names no communication class with a breakdown part");
}

Breakdown breakdown_seconds(const sim::RankBreakdown& b) {
    Breakdown out;
    out.compute_s = to_seconds(b.compute);
    out.recompute_s = to_seconds(b.recompute);
    for (int c = 0; c < comm_class::kCount; ++c) {
        out.*exposed_part(sim::comm_category(c)) = to_seconds(b.comm_exposed[static_cast<std::size_t>(c)]);
    }
    out.bubble_s = to_seconds(b.bubble);
    return out;
}

double busy_seconds(const sim::RankBreakdown& b) { return to_seconds(b.compute + b.recompute); }

std::vector<double> stage_busy_seconds(const sim::Program& program, const sim::SimResult& sim) {
    std::vector<double> busy(program.op_lists.size(), 0.0);
    for (std::size_t r = 0; r < sim.ranks.size() && r < program.ranks.size(); ++r) {
        double& stage = busy[program.ranks[r].op_list];
        stage = std::max(stage, busy_seconds(sim.ranks[r].breakdown));
    }
    return busy;
}

BubbleSplit split_bubble(double bubble_s, double busy_s, std::span<const double> stage_busy_s) {
    BubbleSplit split;
    const double busiest = stage_busy_s.empty() ? 0.0 : *std::max_element(stage_busy_s.begin(), stage_busy_s.end());
    split.stage_imbalance_s = std::clamp(busiest - busy_s, 0.0, bubble_s);
    split.schedule_s = bubble_s - split.stage_imbalance_s;
    return split;
}

void fill_rates(RunResult& r, const Scenario& sc, const hw::GpuSpec& gpu) {
    constexpr double kSecondsPerHour = 3600.0;
    const double t = r.iteration_time_s;
    const double tokens = static_cast<double>(sc.training.global_batch) * sc.model.seq_len;
    r.tokens_per_s = t > 0.0 ? tokens / t : 0.0;
    r.model_flops_per_iteration = model_flops_per_iteration(sc.model, sc.training.global_batch);
    const double per_gpu_s = t > 0.0 ? 1.0 / (t * r.gpus) : 0.0;
    r.model_tflops_per_gpu = r.model_flops_per_iteration * per_gpu_s / 1e12;
    r.hardware_tflops_per_gpu = r.hardware_flops_per_iteration * per_gpu_s / 1e12;
    const double peak = gpu.peak(sc.training.precision).value;
    r.mfu = peak > 0.0 ? r.model_flops_per_iteration * per_gpu_s / peak : 0.0;
    const double bf16_peak = gpu.peak(sim::Precision::Bf16).value;
    r.mfu_bf16 = bf16_peak > 0.0 ? r.model_flops_per_iteration * per_gpu_s / bf16_peak : 0.0;
    if (!sc.training.tokens || r.tokens_per_s <= 0.0) return;
    const double seconds = *sc.training.tokens / r.tokens_per_s;
    r.time_to_train_s = seconds;
    r.goodput = goodput_of(sc.reliability, seconds, r.gpus, checkpoint_bytes(sc.model, sc.training.precision));
    if (sc.cost.gpu_hour_usd) r.cost_usd = r.gpus * (seconds / kSecondsPerHour) * *sc.cost.gpu_hour_usd;
    if (sc.cost.node_power_kw) r.energy_kwh = sc.cluster.nodes * *sc.cost.node_power_kw * (seconds / kSecondsPerHour);
    const CostInputs cost_inputs = resolve_cost_inputs(sc, hw::Economics::builtin());
    r.training_cost = training_cost(cost_inputs, r.gpus, sc.cluster.nodes, seconds);
    if (r.goodput->effective_time_to_train_s)
        r.training_cost_with_failures =
            training_cost(cost_inputs, r.gpus, sc.cluster.nodes, *r.goodput->effective_time_to_train_s);
}

Bytes usable_memory(const hw::GpuSpec& gpu, double headroom) {
    return Bytes(gpu.memory_capacity.value * (1.0 - headroom));
}

void fill_memory(RunResult& r, std::span<const sim::OpListTotals> totals, const hw::GpuSpec& gpu, double headroom) {
    r.stage_peak_memory_bytes.clear();
    for (const auto& list : totals) r.stage_peak_memory_bytes.push_back(list.memory.peak.value);
    r.peak_memory_bytes = r.stage_peak_memory_bytes.empty()
                              ? 0.0
                              : *std::max_element(r.stage_peak_memory_bytes.begin(), r.stage_peak_memory_bytes.end());
    r.memory_capacity_bytes = gpu.memory_capacity.value;
    r.memory_headroom = headroom;
    r.fits_in_memory = r.peak_memory_bytes <= usable_memory(gpu, headroom).value;
}

}  // namespace cuboid
