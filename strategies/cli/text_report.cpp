#include "strategies/cli/text_report.hpp"

#include "strategies/framework.hpp"

#include <cmath>
#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/cost_report.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/names.hpp"

namespace cuboid::cli {

std::string heads_text(const ModelSpec& m) {
    if (m.mla())
        return fmt::format("{} latent-attention heads (q latent {}, kv latent {}, qk {}+{}, v {})", m.heads, m.q_lora_rank,
                           m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim);
    const std::string size = m.attention_width_differs() ? fmt::format(" of {}", m.head_dim) : "";
    return fmt::format("{} heads{} ({} kv)", m.heads, size, m.kv_heads_or_default());
}

namespace {

// "selective", with the modules where they are not Megatron-Core's default [core_attn].
std::string recompute_text(const ParallelPlan& p) {
    if (p.recompute != Recompute::Selective || p.recompute_modules.is_default()) return to_string(p.recompute);
    return fmt::format("{} ({})", to_string(p.recompute), fmt::join(module_names(p.recompute_modules), ", "));
}

constexpr double kGB = 1e9;  // GB = 1e9 bytes throughout the report
constexpr int kStagesListed = 8;

double percent(double part, double whole) { return whole > 0.0 ? 100.0 * part / whole : 0.0; }

// "llama3-8b: " for a preset, "config.json (llama, LlamaForCausalLM): " for an import.
std::string model_origin(const ModelSpec& m) {
    if (m.imported)
        return fmt::format("{} ({}{}): ", m.imported->path, m.imported->model_type,
                           m.imported->architecture.empty() ? "" : ", " + m.imported->architecture);
    return m.preset.empty() ? "" : m.preset + ": ";
}

// What model.hf_config read, and what cuboid only approximates of it.
void write_import(std::ostream& out, const ModelSpec& m) {
    if (!m.imported) return;
    std::vector<std::string> read;
    for (const auto& [field, key] : m.imported->fields_read) read.push_back(field + " -> " + key);
    fmt::print(out, "imported  {} (model keys in the scenario override these)\n", join(read));
    if (!m.imported->fields_not_read.empty())
        fmt::print(out, "not read  {} (no model key takes them)\n", join(m.imported->fields_not_read));
    for (const auto& note : m.imported->notes) fmt::print(out, "note      {}\n", note);
}

void write_setup(std::ostream& out, const Scenario& s) {
    const ModelSpec& m = s.model;
    const hw::ClusterSpec& c = s.cluster;
    const ParallelPlan& p = s.parallel;
    fmt::print(out, "scenario  {}{}\n", s.name, s.source_file.empty() ? "" : " (" + s.source_file + ")");
    const std::string mtp = m.mtp_layers > 0 ? fmt::format(", {} multi-token prediction module{}", m.mtp_layers,
                                                             m.mtp_layers > 1 ? "s" : "")
                                             : "";
    fmt::print(out, "model     {}{} layers, hidden {}, {}, ffn {}, seq {}, vocab {}{}{}\n",
               model_origin(m), m.layers, m.hidden, heads_text(m),
               m.ffn_or_default(), m.seq_len, m.vocab, m.swiglu ? ", swiglu" : "", mtp);
    if (m.moe())
        fmt::print(out, "experts   {} routed experts, top-{}, expert ffn {}{}{}, load imbalance {}\n", m.experts, m.top_k(),
                   m.expert_ffn_or_default(),
                   m.shared_experts > 0 ? fmt::format(", {} shared", m.shared_experts) : "",
                   m.dense_layers > 0 ? fmt::format(", first {} layers dense", m.dense_layers) : "", m.moe_load_imbalance);
    write_import(out, m);
    // A domain beyond one node is named; one node's, the default, is what "in a node" already says.
    const std::string domain =
        c.domain_gpus() > c.gpus_per_node
            ? fmt::format(" (NVLink domains of {} GPUs, {} nodes each)", c.domain_gpus(), c.domain_gpus() / c.gpus_per_node)
            : "";
    fmt::print(out, "cluster   {} nodes x {} {} = {} GPUs; {} in a node{}; {} x {} Gbit/s {} per node, {}, "
                    "oversubscription {}\n",
               c.nodes, c.gpus_per_node, c.gpu, c.gpus(), hw::to_string(c.intra_node), domain,
               c.nics_per_node, c.nic_gbps, hw::to_string(c.inter_node),
               hw::to_string(c.topology), c.oversubscription);
    fmt::print(out, "plan      tensor {} x pipeline {}{} x data {}, {} schedule{}, recompute {}, tensor mode {}{}, "
                    "ZeRO {}{}, dp overlap {}\n",
               p.tensor, p.pipeline,
               p.context > 1 ? fmt::format(" x context {} ({})", p.context, to_string(p.context_mode)) : "",
               effective_data_parallel(s), to_string(p.schedule),
               p.virtual_stages > 1 ? fmt::format(" ({} virtual stages)", p.virtual_stages) : "",
               recompute_text(p), to_string(p.tensor_mode), p.sequence_parallel ? ", sequence parallel" : "",
               p.zero_stage, p.shard_group > 0 && p.shard_group < effective_data_parallel(s) * p.context
                   ? fmt::format(" (hybrid: sharded over {} ranks)", p.shard_group)
                   : "",
               p.dp_overlap ? "on" : "off");
    if (m.moe()) {
        const int ranks = p.tensor * p.context * effective_data_parallel(s);
        const int per_expert = std::max(1, p.expert * p.expert_tensor);
        const bool hybrid = p.zero_stage == 3 && p.shard_group > 0 && p.shard_group < effective_data_parallel(s) * p.context;
        fmt::print(out, "          experts: ep{} etp{} (expert {} x expert tensor {} x expert data {}){}\n", p.expert,
                   p.expert_tensor, p.expert, p.expert_tensor, ranks / per_expert,
                   hybrid ? fmt::format(", ZeRO 3 over the {} expert-data ranks of each shard group",
                                        p.tensor * p.shard_group / per_expert)
                          : "");
    }
    const bool fp8 = s.training.precision == sim::Precision::Fp8;
    const auto& grads = s.training.grad_precision;
    fmt::print(out, "training  global batch {} sequences, micro-batch {}, {}{}{}{}\n", s.training.global_batch,
               s.training.micro_batch, precision_name(s.training.precision),
               fp8 ? " (" + fp8_recipe_name(m.fp8_recipe) + " scaling)" : std::string(),
               grads ? ", " + precision_name(*grads) + " gradients" : std::string(),
               s.training.optimizer_offload ? ", optimizer on the host" : "");
    fmt::print(out, "stack     {}: attention {}{}, hidden dropout {}, ZeRO {}, dp overlap {}, tp backward overlap {}, transformer engine {}\n",
               framework_name(s.stack.framework), attention_kernel_name(m.attention),
               m.attention_dropout ? " with dropout" : " without dropout", m.hidden_dropout ? "on" : "off", p.zero_stage,
               p.dp_overlap ? "on" : "off",
               p.tp_backward_overlap ? "on" : "off", m.transformer_engine ? "on" : "off");
}

// One row of the memory table: a stage's peak and its parts in GB.
void write_stage_memory(std::ostream& out, const RunResult& r, std::size_t i, const char* note) {
    const StageMemory& m = r.stage_memory[i];
    const ResidentMemory& held = m.resident;
    const double recomputed = i < r.stage_recompute_fraction.size() ? r.stage_recompute_fraction[i] : 0.0;
    fmt::print(out, "          stage {:<5}{:>8.1f}{:>9.1f}{:>7.1f}{:>11.1f}{:>9.1f}{:>13.1f}{}{}\n", i, m.peak_bytes / kGB,
               held.weights_bytes / kGB, held.gradients_bytes / kGB, held.optimizer_state_bytes / kGB,
               held.pipeline_buffers_bytes / kGB, m.activations_bytes / kGB, note,
               recomputed > 0.0 && recomputed < 1.0 ? fmt::format(", {:.0f} % of layers recomputed", 100.0 * recomputed)
                                                    : std::string());
}

// Beside the precision's own peak, the dense BF16 one, so that plans of different precisions
// compare on one yardstick.
void write_mfu(std::ostream& out, const Scenario& s, const RunResult& r) {
    if (s.training.precision == sim::Precision::Bf16) {
        fmt::print(out, "MFU       {:.1f} % of the dense bf16 peak\n", 100.0 * r.mfu);
        return;
    }
    fmt::print(out, "MFU       {:.1f} % of the dense {} peak, {:.1f} % of the dense bf16 peak\n", 100.0 * r.mfu,
               precision_name(s.training.precision), 100.0 * r.mfu_bf16);
}

void write_memory(std::ostream& out, const RunResult& r) {
    const double usable = r.memory_capacity_bytes * (1.0 - r.memory_headroom);
    fmt::print(out, "memory    peak {:.1f} GB of {:.1f} GB per GPU ({:.0f} %){}: {}\n", r.peak_memory_bytes / kGB,
               r.memory_capacity_bytes / kGB, percent(r.peak_memory_bytes, r.memory_capacity_bytes),
               r.memory_headroom > 0.0
                   ? fmt::format(", {:.1f} GB usable with {:.0f} % headroom", usable / kGB, 100.0 * r.memory_headroom)
                   : std::string(),
               r.fits_in_memory ? "fits" : "DOES NOT FIT");
    const auto& stages = r.stage_memory;
    if (stages.empty()) return;
    fmt::print(out, "          GB per GPU     peak  weights  grads  optimizer  buffers  activations\n");
    if (stages.size() <= kStagesListed) {
        for (std::size_t i = 0; i < stages.size(); ++i) write_stage_memory(out, r, i, "");
        return;
    }
    // Many stages: the one that decides fit, and the range of the others.
    const std::size_t worst = peak_stage(stages);
    write_stage_memory(out, r, worst, " (the peak)");
    const auto [lo, hi] = std::minmax_element(r.stage_peak_memory_bytes.begin(), r.stage_peak_memory_bytes.end());
    fmt::print(out, "          {} stages: from {:.1f} GB (stage {}) to {:.1f} GB (stage {}); every stage in the JSON "
                    "result\n",
               stages.size(), *lo / kGB, lo - r.stage_peak_memory_bytes.begin(), *hi / kGB,
               hi - r.stage_peak_memory_bytes.begin());
}

void write_breakdown(std::ostream& out, const RunResult& r) {
    const Breakdown& b = r.breakdown;
    std::string coords;
    for (const RunResult::AxisCoord& c : r.critical_rank_coords)
        coords += fmt::format("{}{} {}", coords.empty() ? "" : ", ", c.axis, c.coord);
    fmt::print(out, "breakdown of GPU {} ({}{}on the critical path)\n", r.critical_rank, coords, coords.empty() ? "" : "; ");
    double sum = 0.0;
    for (const BreakdownPart& part : breakdown_parts()) {
        const double seconds = b.*part.seconds;
        if (!part.always_shown && seconds == 0.0) continue;
        fmt::print(out, "  {:<18}{:>10.4f} s {:>6.1f} %\n", part.label, seconds, percent(seconds, r.iteration_time_s));
        sum += seconds;
    }
    fmt::print(out, "  {:<18}{:>10.4f} s {:>6.1f} %\n", "sum", sum, percent(sum, r.iteration_time_s));
    // The bubble in its parts: what the schedule leaves idle with equal stages, and the waiting
    // for a stage with more work (run.hpp, BubbleSplit).
    if (b.bubble_s > 0.0)
        fmt::print(out, "  bubble = {:.4f} s schedule fill and drain + {:.4f} s stage imbalance (the busiest stage "
                        "computes {:.4f} s, this GPU {:.4f} s)\n",
                   r.bubble_split.schedule_s, r.bubble_split.stage_imbalance_s,
                   r.stage_busy_s.empty() ? 0.0 : *std::max_element(r.stage_busy_s.begin(), r.stage_busy_s.end()),
                   b.compute_s + b.recompute_s);
}

void write_training(std::ostream& out, const Scenario& s, const RunResult& r) {
    if (!r.time_to_train_s && !r.cost_usd && !r.energy_kwh) return;
    std::string line = "to train  ";
    if (s.training.tokens) line += fmt::format("{:.3g} tokens: ", *s.training.tokens);
    if (r.time_to_train_s) line += human_duration(*r.time_to_train_s);
    if (r.cost_usd) line += fmt::format(", {:.3g} USD", *r.cost_usd);
    if (r.energy_kwh) line += fmt::format(", {:.3g} MWh", *r.energy_kwh / 1000.0);
    fmt::print(out, "{}\n", line);
    if (r.training_cost)
        for (const std::string& cost : cost_lines(*r.training_cost, s.cluster.gpu)) fmt::print(out, "{}\n", cost);
    if (!r.goodput) return;
    const Goodput& g = *r.goodput;
    fmt::print(out, "goodput   {:.1f} %: {} with failures ({:.2g} per GPU-day, one every {}); checkpoint {:.3g} GB in {} "
                    "every {}{}, restart {}{}\n",
               100.0 * g.goodput, g.effective_time_to_train_s ? human_duration(*g.effective_time_to_train_s) : "never",
               g.failures_per_gpu_day, std::isfinite(g.mtbf_s) ? human_duration(g.mtbf_s) : "never",
               g.checkpoint_bytes / 1e9, human_duration(g.checkpoint_write_s),
               std::isfinite(g.checkpoint_interval_s) ? human_duration(g.checkpoint_interval_s) : "never",
               g.interval_optimal ? " (Daly's optimum)" : "", human_duration(g.restart_s),
               s.reliability.restart_overhead_s ? "" : " (the checkpoint's read; reliability.restart_overhead_s adds the rest)");
}

std::string set_options(const std::vector<std::string>& sets) {
    std::string text;
    for (const std::string& a : sets) text += (text.empty() ? "--set " : " --set ") + a;
    return text;
}

constexpr const char* kKindsTried =
    "sequence parallelism, more recomputation, a smaller micro-batch, a higher ZeRO stage, a deeper pipeline";

}  // namespace

void write_fitting_changes(std::ostream& out, const std::vector<FittingChange>& changes) {
    if (changes.empty()) {
        fmt::print(out, "\nto fit    no single change fits ({}, each tried alone), nor a pair of them\n", kKindsTried);
        return;
    }
    if (changes.front().kinds.size() > 1)
        fmt::print(out, "\nto fit    no single change fits; these pairs do, checked by simulating the changed plan, fastest "
                        "first:\n");
    else
        fmt::print(out, "\nto fit    each change alone fits; checked by simulating the changed plan, fastest first:\n");
    for (const FittingChange& c : changes)
        fmt::print(out, "            {:<50} peak {:.1f} GB, iteration {:.4f} s\n", set_options(c.sets),
                   c.peak_memory_bytes / kGB, c.iteration_time_s);
}

std::string fitting_changes_summary(const std::vector<FittingChange>& changes) {
    if (changes.empty()) return fmt::format("; no single change fits ({}), nor a pair of them", kKindsTried);
    const FittingChange& c = changes.front();
    return fmt::format("; fits with {} (peak {:.1f} GB, iteration {:.4f} s){}", set_options(c.sets),
                       c.peak_memory_bytes / kGB, c.iteration_time_s,
                       changes.size() > 1 ? fmt::format(", {} more changes in the report", changes.size() - 1) : "");
}

std::string human_duration(double seconds) {
    if (seconds >= 86400.0) return fmt::format("{:.1f} days", seconds / 86400.0);
    if (seconds >= 3600.0) return fmt::format("{:.1f} h", seconds / 3600.0);
    if (seconds >= 60.0) return fmt::format("{:.1f} min", seconds / 60.0);
    return fmt::format("{:.2f} s", seconds);
}

void write_report(std::ostream& out, const Scenario& s, const RunResult& r) {
    write_setup(out, s);
    fmt::print(out, "\niteration {:.4f} s\n", r.iteration_time_s);
    fmt::print(out, "tokens/s  {:.4g}\n", r.tokens_per_s);
    fmt::print(out, "per GPU   {:.1f} TFLOP/s model, {:.1f} TFLOP/s hardware (with recomputation)\n",
               r.model_tflops_per_gpu, r.hardware_tflops_per_gpu);
    write_mfu(out, s, r);
    write_memory(out, r);
    write_training(out, s, r);
    fmt::print(out, "\n");
    write_breakdown(out, r);
    // A folded run says so: its events are those of one GPU per set of GPUs proved identical.
    const std::string folded =
        r.sim_fold_factor > 1.0
            ? fmt::format(", one GPU simulated for every {:.3g} proved identical (--no-fold: all)", r.sim_fold_factor)
            : std::string();
    fmt::print(out, "\nsimulated {} events in {:.3f} s wall time{}; fingerprint {}\n", r.sim_events, r.sim_wall_s,
               folded, fingerprint_text(r.fingerprint));
}

}  // namespace cuboid::cli
