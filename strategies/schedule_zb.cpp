// Zero-bubble schedules (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the backward
// of a micro-batch is split into B, the input gradients the previous stage waits for, and W, the
// weight gradients nothing waits for until the optimizer step, so W can be moved into the bubbles.
//
// ZB-H1 (§3.1, Figure 3): 1F1B's warm-up and its F/B order, with stage s deferring its W passes by
// s micro-batches: W_k runs right after B_{k+s}, and the last s W passes after the last B (the
// authors' Megatron patch, sail-sg/zero-bubble-pipeline-parallelism branch zb-h1-quick-start,
// pops the weight-gradient queue once the stage's rank of B passes have run). The last stages,
// which start late, run their B passes back to back and so feed the gradient upstream earlier;
// the first stages fill the cool-down's waits with W. Stage s then holds, at its peak, the p - s
// micro-batches 1F1B holds between F and B plus s micro-batches whose W is pending, which keep only
// the inputs of their weight-gradient GEMMs: no stage holds more than 1F1B's first stage (p
// micro-batches' activations), the paper's memory bound for ZB-H1.
#include <algorithm>
#include <array>

#include "strategies/schedule.hpp"

namespace cuboid {

std::vector<PipelineStep> zb_h1_stage_schedule(int p, int m, int stage) {
    const int warmup = std::min(p - stage - 1, m);
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(3 * m));
    int next_forward = 0, next_w = 0;
    for (; next_forward < warmup; ++next_forward) out.push_back({Pass::Forward, next_forward, 0});
    for (int k = 0; k < m; ++k) {
        if (next_forward < m) out.push_back({Pass::Forward, next_forward++, 0});
        out.push_back({Pass::Backward, k, 0});
        if (k >= stage) out.push_back({Pass::WeightGrad, next_w++, 0});
    }
    for (; next_w < m; ++next_w) out.push_back({Pass::WeightGrad, next_w, 0});
    return out;
}

// ZB-V (§6, Figure 8): stage s holds chunk 0 (model chunk s, on the way down) and chunk 1 (model
// chunk 2p-1-s, on the way up). The authors' handcrafted order (sail-sg/zero-bubble-pipeline-
// parallelism, megatron/core/pipeline_parallel/handcrafted_zb_v), built for n = max(2p-1, m)
// micro-batches, the passes of micro-batches m and beyond then dropped (a subsequence of an order
// that cannot deadlock cannot either):
//  warm-up: 2(p-s)-1 forwards of chunk 0; s pairs F chunk 1, F chunk 0; p-s triples F B W of
//    chunk 1;
//  steady, until both chunks forwarded n: F chunk 0 (while any is left), B W chunk 0, F B W chunk 1;
//  cool-down: s pairs B chunk 0, B chunk 1; p-s pairs B chunk 0, W chunk 0 (the oldest pending);
//    then the pending W of chunk 1, then those of chunk 0.
// Each stage holds at most 2p chunk passes between F and W, p micro-batches of a whole stage's
// activations: 1F1B's first stage, the paper's bound.
std::vector<PipelineStep> zb_v_stage_schedule(int p, int m, int stage) {
    const int n = std::max(2 * p - 1, m);
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(6 * n));
    std::array<int, 2> forwards{0, 0}, backwards{0, 0}, weights{0, 0};
    const auto f = [&](int c) { out.push_back({Pass::Forward, forwards[c]++, c}); };
    const auto b = [&](int c) { out.push_back({Pass::Backward, backwards[c]++, c}); };
    const auto w = [&](int c) { out.push_back({Pass::WeightGrad, weights[c]++, c}); };
    for (int i = 0; i < 2 * (p - stage) - 1; ++i) f(0);
    for (int i = 0; i < stage; ++i) f(1), f(0);
    for (int i = 0; i < p - stage; ++i) f(1), b(1), w(1);
    while (forwards[1] < forwards[0] || forwards[0] < n) {
        if (forwards[0] < n) f(0);
        b(0), w(0), f(1), b(1), w(1);
    }
    for (int i = 0; i < stage; ++i) b(0), b(1);
    for (int i = 0; i < p - stage; ++i) b(0), w(0);
    while (weights[1] < backwards[1]) w(1);
    while (weights[0] < backwards[0]) w(0);
    std::erase_if(out, [m](const PipelineStep& st) { return st.micro >= m; });
    return out;
}

}  // namespace cuboid
