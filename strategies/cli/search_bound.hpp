// A lower bound on the iteration time of a built and priced program, without simulating it:
// what no schedule, overlap or network can beat. The search simulates plans in the order of this
// bound and stops once the bound passes the best times found (branch and bound).
#pragma once

#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "strategies/layout.hpp"

namespace cuboid::cli {

struct IterationBound {
    double compute_s = 0.0;   // the busiest stage's compute-stream work
    double fill_s = 0.0;      // pipeline fill before that stage can start
    double total_s() const { return compute_s + fill_s; }
};

// For each stage s: the compute ops of its compute stream run one after another (the stream is
// in order), so s is busy at least W_s = the sum of their priced durations. Its first compute op
// (s > 0) is the forward of micro-batch 0 on its first chunk, which needs that micro-batch's
// activations from every earlier stage's first chunk: at least F_r x layers of chunk (r, 0) for
// each r < s, with F_r the priced forward compute of one layer and one micro-batch on stage r
// (the layer kernels only: embedding and head are left out, so the fill stays a lower bound).
// Bound = max over stages of (fill_s + W_s). Communication adds nothing here: it can overlap.
IterationBound iteration_lower_bound(const sim::Program& program, const sim::ProgramCosts& costs,
                                     const Layout& layout);

}  // namespace cuboid::cli
