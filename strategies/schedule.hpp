// Pipeline schedules as per-stage compute orders: which (micro-batch, model chunk) a stage runs
// forward, pre-checkpointed forward, recomputes or runs backward, step after step.
// Communication follows from this order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "strategies/scenario.hpp"

namespace cuboid {

// The compute-side passes of a stage (seed_algorithms §1.1 notation F, Fc, R, B).
enum class Pass : std::uint8_t {
    Forward,         // F: layers keep what the stage's recompute policy stores
    ForwardCkpt,     // Fc: Merak's pre-checkpoint forward, the micro-batch keeps only its inputs
    Recompute,       // R: re-run of an Fc micro-batch's forward, before its gradient is awaited
    Backward,        // B: backward (with inner recompute of checkpointed layers after an F); under a
                     // schedule that splits_backward, the input-gradient half only
    WeightGrad,      // W: the weight-gradient half of a split backward (zero-bubble schedules)
};

struct PipelineStep {
    Pass pass = Pass::Forward;
    int micro = 0;  // micro-batch
    int chunk = 0;  // local model chunk (virtual stage), 0..v-1

    bool is_forward() const { return pass == Pass::Forward || pass == Pass::ForwardCkpt; }
};

// Order of stage `stage` of `p` for `m` micro-batches and `v` chunks (seed_algorithms §5.1, §1.1),
// the order function of the schedule's row in strategies/schedule_kinds.hpp:
//  gpipe: F_0..F_{m-1}, then B_{m-1}..B_0.
//  1f1b: min(p-s-1, m) warm-up forwards, then F/B alternating, then the remaining backwards.
//  interleaved (Megatron): forward k runs chunk (k / p) % v on micro-batch (k / (p v)) p + k % p,
//    warm-up min(m v, 2 (p-s-1) + (v-1) p), then 1F1B; backwards visit chunks in reverse.
//  shifted-critical-path (Merak): see schedule_scp.cpp.
//  zb-h1, zb-v (Qi et al. 2024): see schedule_zb.cpp.
//  dualpipev (DeepSeek): see schedule_dualpipev.cpp.
std::vector<PipelineStep> stage_schedule(Schedule schedule, int p, int m, int v, int stage);

// Whether the schedule runs each backward as two passes, B (input gradients, sent upstream) and a
// later W (weight gradients), instead of one (its row's splits_backward).
bool splits_backward(Schedule schedule);

// ZB-H1's order of one stage (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §3.1 and
// Figure 3): 1F1B's order of F and B, stage s running the W of micro-batch k right after the B of
// micro-batch k + s, and the last s W passes after the last B.
std::vector<PipelineStep> zb_h1_stage_schedule(int p, int m, int stage);

// ZB-V's order of one stage (Qi et al. 2024 §6, Figure 8; the authors' handcrafted generator):
// chunk 0 is the stage's chunk on the way down (model chunk s), chunk 1 on the way up (2p-1-s).
std::vector<PipelineStep> zb_v_stage_schedule(int p, int m, int stage);

// DualPipeV's order of one stage (DeepSeek's DualPipe cut in half onto ZB-V's V placement,
// deepseek-ai/DualPipe dualpipev.py): chunk 0 on the way down (model chunk s), chunk 1 on the way
// up (2p-1-s). Needs m >= 2p.
std::vector<PipelineStep> dualpipev_stage_schedule(int p, int m, int stage);

// Merak's shifted critical path order of one stage (Lai et al. 2023; Merak's
// full_critical_path_1f1b, seed_algorithms §1.1). Needs scp_unsupported_reason(p, m) empty.
std::vector<PipelineStep> scp_stage_schedule(int p, int m, int stage);

// Why SCP cannot run `p` stages with `m` micro-batches (Merak's preconditions), or nothing.
std::optional<std::string> scp_unsupported_reason(int p, int m);

// "F0 Fc1 R0 B0 W0 ..." (with ".c" after the micro-batch when `chunks` is true).
std::string step_words(const std::vector<PipelineStep>& steps, bool chunks = false);

}  // namespace cuboid
