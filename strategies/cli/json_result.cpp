#include "strategies/cli/json_result.hpp"

#include "strategies/framework.hpp"

#include <cmath>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/cost_report.hpp"
#include "strategies/names.hpp"
#include "strategies/training_state.hpp"

namespace cuboid::cli {
namespace {

// Byte counts are integers in the contract; the model computes them as doubles.
std::int64_t whole_bytes(double b) { return static_cast<std::int64_t>(std::llround(b)); }

nlohmann::ordered_json breakdown_json(const Breakdown& b) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const BreakdownPart& part : breakdown_parts()) j[part.key] = b.*part.seconds;
    return j;
}

nlohmann::ordered_json cluster_json(const hw::ClusterSpec& c) {
    nlohmann::ordered_json j{{"gpu", c.gpu},
                     {"nodes", c.nodes},
                     {"gpus_per_node", c.gpus_per_node},
                     {"scale_up_domain", c.domain_gpus()},
                     {"intra_node", hw::to_string(c.intra_node)},
                     {"inter_node", hw::to_string(c.inter_node)},
                     {"nic_gbps", c.nic_gbps},
                     {"nics_per_node", c.nics_per_node},
                     {"topology", hw::to_string(c.topology)},
                     {"oversubscription", c.oversubscription}};
    if (c.intra_node_gbps) j["intra_node_gbps"] = *c.intra_node_gbps;
    if (c.profile) j["profile"] = *c.profile;
    return j;
}

// model.hf_config: the file, its family, which config fields gave which model keys, and what is
// only approximated.
nlohmann::ordered_json model_import_json(const ModelImport& m) {
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();
    for (const auto& [field, key] : m.fields_read) fields[field] = key;
    return {{"path", m.path},
            {"model_type", m.model_type},
            {"architecture", m.architecture},
            {"fields_read", fields},
            {"fields_not_read", m.fields_not_read},
            {"notes", m.notes}};
}

}  // namespace

nlohmann::ordered_json goodput_json(const Goodput& g) {
    nlohmann::ordered_json o{{"goodput", g.goodput},
                             {"failures_per_gpu_day", g.failures_per_gpu_day},
                             {"storage_gb_per_s", g.storage_gb_per_s},
                             {"checkpoint_bytes", g.checkpoint_bytes},
                             {"checkpoint_write_s", g.checkpoint_write_s},
                             {"restart_s", g.restart_s},
                             {"checkpoint_interval_optimal", g.interval_optimal}};
    // Infinite figures (nothing fails) are left out: JSON has no infinity.
    if (std::isfinite(g.mtbf_s)) o["mtbf_s"] = g.mtbf_s;
    if (std::isfinite(g.checkpoint_interval_s)) o["checkpoint_interval_s"] = g.checkpoint_interval_s;
    if (g.effective_time_to_train_s) o["effective_time_to_train_s"] = *g.effective_time_to_train_s;
    return o;
}

nlohmann::ordered_json memory_json(const RunResult& r) {
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.stage_memory.size(); ++i) {
        const StageMemory& m = r.stage_memory[i];
        const ResidentMemory& held = m.resident;
        const std::int64_t peak = whole_bytes(m.peak_bytes);
        const std::int64_t weights = whole_bytes(held.weights_bytes);
        const std::int64_t gradients = whole_bytes(held.gradients_bytes);
        const std::int64_t optimizer = whole_bytes(held.optimizer_state_bytes);
        const std::int64_t buffers = whole_bytes(held.pipeline_buffers_bytes);
        // The remainder, so that the integers the contract shows sum exactly to the peak.
        const std::int64_t activations = peak - weights - gradients - optimizer - buffers;
        nlohmann::ordered_json stage{{"stage", i},
                                     {"peak_bytes", peak},
                                     {"weights_bytes", weights},
                                     {"gradients_bytes", gradients},
                                     {"optimizer_state_bytes", optimizer},
                                     {"pipeline_buffers_bytes", buffers},
                                     {"activations_bytes", activations}};
        if (i < r.stage_recompute_fraction.size()) stage["recompute_fraction"] = r.stage_recompute_fraction[i];
        stages.push_back(stage);
    }
    nlohmann::ordered_json j{{"peak_stage", peak_stage(r.stage_memory)}};
    // Only when asked for, so that runs without it keep their output unchanged.
    if (r.memory_headroom > 0.0) {
        j["headroom"] = r.memory_headroom;
        j["usable_bytes"] = whole_bytes(r.memory_capacity_bytes * (1.0 - r.memory_headroom));
    }
    j["stages"] = stages;
    return j;
}

nlohmann::ordered_json fitting_changes_json(const std::vector<FittingChange>& changes) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const FittingChange& c : changes)
        list.push_back({{"kind", change_kinds_name(c.kinds)},
                        {"set", c.sets},
                        {"peak_memory_bytes", whole_bytes(c.peak_memory_bytes)},
                        {"iteration_time_s", c.iteration_time_s},
                        {"checked_by", "simulation"}});
    return list;
}

int effective_data_parallel(const Scenario& s) {
    if (s.parallel.data > 0) return s.parallel.data;
    const int per_replica = s.parallel.tensor * s.parallel.pipeline * s.parallel.context;
    return per_replica > 0 ? s.cluster.gpus() / per_replica : 0;
}

std::string fingerprint_text(std::uint64_t fingerprint) { return fmt::format("0x{:016x}", fingerprint); }

namespace {

nlohmann::ordered_json plan_fields(const Scenario& s) {
    const ParallelPlan& p = s.parallel;
    return {{"tensor", p.tensor},
            {"pipeline", p.pipeline},
            {"data", effective_data_parallel(s)},
            {"context", p.context},
            {"context_mode", to_string(p.context_mode)},
            {"virtual_stages", p.virtual_stages},
            {"schedule", to_string(p.schedule)},
            {"recompute", to_string(p.recompute)},
            {"recompute_modules", p.recompute == Recompute::Selective ? nlohmann::json(module_names(p.recompute_modules))
                                                                      : nlohmann::json::array()},
            {"tensor_mode", to_string(p.tensor_mode)},
            {"sequence_parallel", p.sequence_parallel},
            {"overlap_chunks", p.overlap_chunks},
            {"zero_stage", p.zero_stage},
            {"shard_group", p.shard_group > 0 ? p.shard_group : effective_data_parallel(s) * p.context},
            {"dp_overlap", p.dp_overlap},
            {"tp_backward_overlap", p.tp_backward_overlap},
            {"global_batch", s.training.global_batch},
            {"micro_batch", s.training.micro_batch},
            {"precision", precision_name(s.training.precision)},
            // The gradient buffer's bytes per element: the precision's default unless given.
            {"grad_bytes_per_param", state_bytes_per_param(s.training).grad},
            {"framework", framework_name(s.stack.framework)},
            {"attention", attention_kernel_name(s.model.attention)},
            {"attention_dropout", s.model.attention_dropout},
            {"hidden_dropout", s.model.hidden_dropout},
            {"transformer_engine", s.model.transformer_engine},
            {"fp8_recipe", fp8_recipe_name(s.model.fp8_recipe)}};
}

// The critical rank's coordinate on each of the plan's axes, in the axes' order.
nlohmann::ordered_json critical_rank_coords_json(const RunResult& r) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const RunResult::AxisCoord& c : r.critical_rank_coords) j[std::string(c.axis)] = c.coord;
    return j;
}

}  // namespace

nlohmann::ordered_json plan_json(const Scenario& s) {
    const ParallelPlan& p = s.parallel;
    nlohmann::ordered_json plan = plan_fields(s);
    if (s.model.moe()) {  // only for mixture-of-experts models: dense plans keep their fields
        const int ranks = p.tensor * p.context * effective_data_parallel(s);
        plan["expert"] = p.expert;
        plan["expert_tensor"] = p.expert_tensor;
        plan["expert_data"] = ranks / std::max(1, p.expert * p.expert_tensor);
        // The expert-data ranks ZeRO shards the experts' state over: those of one shard group
        // under hybrid sharding, else all of them.
        const int sharded = p.shard_group > 0 ? p.tensor * p.shard_group : ranks;
        plan["expert_shard_group"] = sharded / std::max(1, p.expert * p.expert_tensor);
    }
    return plan;
}

nlohmann::ordered_json result_json(const Scenario& s, const RunResult& r) {
    nlohmann::ordered_json j{
        {"scenario", r.scenario},
        {"gpus", r.gpus},
        {"iteration_time_s", r.iteration_time_s},
        {"tokens_per_s", r.tokens_per_s},
        {"model_flops_per_iteration", r.model_flops_per_iteration},
        {"hardware_flops_per_iteration", r.hardware_flops_per_iteration},
        {"model_tflops_per_gpu", r.model_tflops_per_gpu},
        {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
        {"mfu", r.mfu},
        {"peak_memory_bytes", whole_bytes(r.peak_memory_bytes)},
        {"memory_capacity_bytes", whole_bytes(r.memory_capacity_bytes)},
        {"fits_in_memory", r.fits_in_memory},
        {"breakdown_s", breakdown_json(r.breakdown)},
        // fold_factor: GPUs per simulated GPU (1: every GPU simulated; docs/simulator.md,
        // "Symmetry folding"), so that `events` reads right.
        {"sim", {{"events", r.sim_events}, {"wall_s", r.sim_wall_s}, {"fold_factor", r.sim_fold_factor}}},
        // Extras beyond the contract.
        {"critical_rank", r.critical_rank},
        {"critical_rank_coords", critical_rank_coords_json(r)},
        {"fingerprint", fingerprint_text(r.fingerprint)},
        {"plan", plan_json(s)},
        {"cluster", cluster_json(s.cluster)},
        {"model_preset", s.model.preset},
    };
    if (s.model.imported) j["model_import"] = model_import_json(*s.model.imported);
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const double b : r.stage_peak_memory_bytes) stages.push_back(whole_bytes(b));
    j["stage_peak_memory_bytes"] = stages;
    j["memory"] = memory_json(r);
    // The bubble of breakdown_s in its two parts (they sum to it), and what they come from.
    j["bubble_split_s"] = {{"schedule", r.bubble_split.schedule_s},
                           {"stage_imbalance", r.bubble_split.stage_imbalance_s}};
    j["stage_busy_s"] = r.stage_busy_s;
    j["stage_recompute_fraction"] = r.stage_recompute_fraction;
    j["chunk_layers"] = r.chunk_layers;
    j["tensor_mesh"] = r.tensor_mesh;
    j["mfu_bf16"] = r.mfu_bf16;
    if (r.time_to_train_s) j["time_to_train_s"] = *r.time_to_train_s;
    if (r.cost_usd) j["cost_usd"] = *r.cost_usd;
    if (r.energy_kwh) j["energy_kwh"] = *r.energy_kwh;
    if (r.training_cost) j["training_cost"] = cost_json(*r.training_cost);
    if (r.training_cost_with_failures) j["training_cost_with_failures"] = cost_json(*r.training_cost_with_failures);
    if (r.goodput) j["goodput"] = goodput_json(*r.goodput);
    return j;
}

}  // namespace cuboid::cli
