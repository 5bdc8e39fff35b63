// Pipeline schedules as per-stage compute orders: which (micro-batch, model chunk) a stage runs
// forward or backward, step after step. Communication follows from this order.
#pragma once

#include <vector>

#include "strategies/scenario.hpp"

namespace cuboid {

struct PipelineStep {
    bool forward = true;
    int micro = 0;  // micro-batch
    int chunk = 0;  // local model chunk (virtual stage), 0..v-1
};

// Order of stage `stage` of `p` for `m` micro-batches and `v` chunks (seed_algorithms §5.1):
//  gpipe: F_0..F_{m-1}, then B_{m-1}..B_0.
//  1f1b: min(p-s-1, m) warm-up forwards, then F/B alternating, then the remaining backwards.
//  interleaved (Megatron): forward k runs chunk (k / p) % v on micro-batch (k / (p v)) p + k % p,
//    warm-up min(m v, 2 (p-s-1) + (v-1) p), then 1F1B; backwards visit chunks in reverse.
std::vector<PipelineStep> stage_schedule(Schedule schedule, int p, int m, int v, int stage);

}  // namespace cuboid
