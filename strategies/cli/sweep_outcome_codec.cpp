#include "strategies/cli/sweep_outcome_codec.hpp"

#include <cmath>
#include <stdexcept>

namespace cuboid::cli {
namespace {

using nlohmann::json;

json breakdown_to_json(const Breakdown& b) {
    json j = json::array();
    for (const BreakdownPart& part : breakdown_parts()) j.push_back(b.*part.seconds);
    return j;
}

Breakdown breakdown_from_json(const json& j) {
    Breakdown b;
    std::size_t i = 0;
    for (const BreakdownPart& part : breakdown_parts()) b.*part.seconds = j.at(i++).get<double>();
    return b;
}

template <typename T>
json optional_to_json(const std::optional<T>& v) {
    return v ? json(*v) : json();
}

template <typename T>
std::optional<T> optional_from_json(const json& j) {
    return j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
}

// Infinity (nothing fails: no time between failures) travels as null.
json finite_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }
double finite_or_infinity(const json& j) { return j.is_null() ? INFINITY : j.get<double>(); }

json goodput_to_json(const std::optional<Goodput>& g) {
    if (!g) return nullptr;
    return json::array({g->failures_per_gpu_day, g->storage_gb_per_s, finite_or_null(g->mtbf_s), g->checkpoint_bytes,
                        g->checkpoint_write_s, g->restart_s, finite_or_null(g->checkpoint_interval_s),
                        g->interval_optimal, g->goodput, optional_to_json(g->effective_time_to_train_s)});
}

std::optional<Goodput> goodput_from_json(const json& j) {
    if (j.is_null()) return std::nullopt;
    Goodput g;
    g.failures_per_gpu_day = j.at(0).get<double>();
    g.storage_gb_per_s = j.at(1).get<double>();
    g.mtbf_s = finite_or_infinity(j.at(2));
    g.checkpoint_bytes = j.at(3).get<double>();
    g.checkpoint_write_s = j.at(4).get<double>();
    g.restart_s = j.at(5).get<double>();
    g.checkpoint_interval_s = finite_or_infinity(j.at(6));
    g.interval_optimal = j.at(7).get<bool>();
    g.goodput = j.at(8).get<double>();
    g.effective_time_to_train_s = optional_from_json<double>(j.at(9));
    return g;
}

json stage_memory_to_json(const std::vector<StageMemory>& stages) {
    json list = json::array();
    for (const StageMemory& m : stages)
        list.push_back({m.resident.weights_bytes, m.resident.gradients_bytes, m.resident.optimizer_state_bytes,
                        m.resident.pipeline_buffers_bytes, m.activations_bytes, m.peak_bytes});
    return list;
}

std::vector<StageMemory> stage_memory_from_json(const json& list) {
    std::vector<StageMemory> stages;
    for (const json& n : list) {
        StageMemory m;
        double* const parts[] = {&m.resident.weights_bytes,          &m.resident.gradients_bytes,
                                 &m.resident.optimizer_state_bytes,  &m.resident.pipeline_buffers_bytes,
                                 &m.activations_bytes,               &m.peak_bytes};
        for (std::size_t k = 0; k < std::size(parts); ++k) *parts[k] = n.at(k).get<double>();
        stages.push_back(m);
    }
    return stages;
}

// Every member of RunResult, so that a merged outcome is the one the rank computed.
json result_to_json(const RunResult& r) {
    return {{"scenario", r.scenario},
            {"gpus", r.gpus},
            {"numbers",
             json::array({r.iteration_time_s, r.tokens_per_s, r.model_flops_per_iteration,
                          r.hardware_flops_per_iteration, r.model_tflops_per_gpu, r.hardware_tflops_per_gpu, r.mfu,
                          r.peak_memory_bytes, r.memory_capacity_bytes, r.sim_wall_s, r.mfu_bf16,
                          r.sim_fold_factor})},
            {"fits", r.fits_in_memory},
            {"headroom", r.memory_headroom},
            {"stage_memory", stage_memory_to_json(r.stage_memory)},
            {"breakdown", breakdown_to_json(r.breakdown)},
            {"bubble_split", json::array({r.bubble_split.schedule_s, r.bubble_split.stage_imbalance_s})},
            {"stage_busy", r.stage_busy_s},
            {"critical_rank", r.critical_rank},
            {"events", r.sim_events},
            {"fingerprint", r.fingerprint},
            {"stage_peak", r.stage_peak_memory_bytes},
            {"stage_recompute", r.stage_recompute_fraction},
            {"time_to_train_s", optional_to_json(r.time_to_train_s)},
            {"cost_usd", optional_to_json(r.cost_usd)},
            {"energy_kwh", optional_to_json(r.energy_kwh)},
            {"goodput", goodput_to_json(r.goodput)}};
}

RunResult result_from_json(const json& j) {
    RunResult r;
    r.scenario = j.at("scenario").get<std::string>();
    r.gpus = j.at("gpus").get<int>();
    const json& n = j.at("numbers");
    double* const numbers[] = {&r.iteration_time_s,      &r.tokens_per_s, &r.model_flops_per_iteration,
                               &r.hardware_flops_per_iteration, &r.model_tflops_per_gpu,
                               &r.hardware_tflops_per_gpu, &r.mfu, &r.peak_memory_bytes,
                               &r.memory_capacity_bytes, &r.sim_wall_s, &r.mfu_bf16, &r.sim_fold_factor};
    for (std::size_t k = 0; k < std::size(numbers); ++k) *numbers[k] = n.at(k).get<double>();
    r.fits_in_memory = j.at("fits").get<bool>();
    r.memory_headroom = j.at("headroom").get<double>();
    r.stage_memory = stage_memory_from_json(j.at("stage_memory"));
    r.breakdown = breakdown_from_json(j.at("breakdown"));
    r.bubble_split.schedule_s = j.at("bubble_split").at(0).get<double>();
    r.bubble_split.stage_imbalance_s = j.at("bubble_split").at(1).get<double>();
    r.stage_busy_s = j.at("stage_busy").get<std::vector<double>>();
    r.critical_rank = j.at("critical_rank").get<std::uint32_t>();
    r.sim_events = j.at("events").get<std::uint64_t>();
    r.fingerprint = j.at("fingerprint").get<std::uint64_t>();
    r.stage_peak_memory_bytes = j.at("stage_peak").get<std::vector<double>>();
    r.stage_recompute_fraction = j.at("stage_recompute").get<std::vector<double>>();
    r.time_to_train_s = optional_from_json<double>(j.at("time_to_train_s"));
    r.cost_usd = optional_from_json<double>(j.at("cost_usd"));
    r.energy_kwh = optional_from_json<double>(j.at("energy_kwh"));
    r.goodput = goodput_from_json(j.at("goodput"));
    return r;
}

json outcome_to_json(std::size_t index, const PointOutcome& o) {
    return {{"index", index},
            {"status", static_cast<int>(o.status)},
            {"reason", o.reason},
            {"result", o.result ? result_to_json(*o.result) : json()},
            {"run", json::binary(nlohmann::ordered_json::to_cbor(o.run_json))}};
}

PointOutcome outcome_from_json(const json& j) {
    PointOutcome o;
    const int status = j.at("status").get<int>();
    if (status < 0 || status > static_cast<int>(PointStatus::NotRun)) throw std::runtime_error("bad point status");
    o.status = static_cast<PointStatus>(status);
    o.reason = j.at("reason").get<std::string>();
    if (!j.at("result").is_null()) o.result = result_from_json(j.at("result"));
    // Its own CBOR document, read back as ordered_json: the fields keep the rank's order.
    o.run_json = nlohmann::ordered_json::from_cbor(j.at("run").get_binary());
    return o;
}

}  // namespace

std::vector<std::uint8_t> encode_share(const SweepShare& share) {
    json points = json::array();
    for (std::size_t k = 0; k < share.indices.size(); ++k)
        points.push_back(outcome_to_json(share.indices[k], share.outcomes[k]));
    return json::to_cbor(json{{"failure", share.failure}, {"signal", share.signal}, {"points", std::move(points)}});
}

SweepShare decode_share(const std::vector<std::uint8_t>& bytes) {
    try {
        const json j = json::from_cbor(bytes);
        SweepShare share;
        share.failure = j.at("failure").get<std::string>();
        share.signal = j.at("signal").get<int>();
        for (const auto& p : j.at("points")) {
            share.indices.push_back(p.at("index").get<std::size_t>());
            share.outcomes.push_back(outcome_from_json(p));
        }
        return share;
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("a rank's results could not be read: ") + e.what());
    }
}

void merge_share(SweepShare share, std::vector<PointOutcome>& outcomes) {
    for (std::size_t k = 0; k < share.indices.size(); ++k) {
        if (share.indices[k] >= outcomes.size()) throw std::runtime_error("a rank sent a point index out of range");
        outcomes[share.indices[k]] = std::move(share.outcomes[k]);
    }
}

}  // namespace cuboid::cli
