// A lower bound on the iteration time of a built and priced program, without simulating it:
// what no schedule, overlap or network can beat. The search simulates plans in the order of this
// bound and stops once the bound passes the best times found (branch and bound).
#pragma once

#include <algorithm>
#include <functional>

#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "strategies/layout.hpp"

namespace cuboid::cli {

struct IterationBound {
    double compute_s = 0.0;        // the busiest stage's compute-stream work
    double fill_s = 0.0;           // pipeline fill before that stage can start
    double critical_path_s = 0.0;  // the longest chain of ops of one rank (see below)
    double total_s() const { return std::max(compute_s + fill_s, critical_path_s); }
};

// A lower bound on how long one collective takes once every member has issued it: `group` is an
// index into Program::groups. Returning zero is always valid.
using CollectiveLowerBound = std::function<Time(sim::OpKind kind, Bytes bytes, std::uint32_t group)>;

// Two bounds, the larger is taken:
//
// Stage work. For each stage s: the compute ops of its compute stream run one after another (the
// stream is in order), so s is busy at least W_s = the sum of their priced durations. Its first
// compute op (s > 0) is the forward of micro-batch 0 on its first chunk, which needs that
// micro-batch's activations from every earlier stage's first chunk: at least F_r x layers of
// chunk (r, 0) for each r < s, with F_r the priced forward compute of one layer and one
// micro-batch on stage r (the layer kernels only: embedding and head are left out, so the fill
// stays a lower bound). Bound = max over stages of (fill_s + W_s).
//
// Critical path. The executor starts an op no earlier than the end of its dependencies and of the
// op before it on its stream (every stream runs in program order, one op at a time). So on one
// rank, the longest chain through those two orders is a lower bound on its finish, with each
// compute op at its priced duration, each collective at `collective` (its uncontended time: a
// phase cannot end before its latency plus its busiest link's load at full bandwidth) and
// point-to-point transfers at zero; the first compute op of stage s starts no earlier than
// fill_s. This is what carries the communication that cannot overlap: the data-parallel
// reduction of the last gradients after the last backward, the optimizer step after it, ZeRO's
// parameter gathers after the step, tensor-parallel collectives the next kernel waits for.
// Ranks are not made to wait for each other here (a collective starts when this rank issues it),
// which only lowers the bound.
IterationBound iteration_lower_bound(const sim::Program& program, const sim::ProgramCosts& costs,
                                     const Layout& layout, const CollectiveLowerBound& collective = {});

}  // namespace cuboid::cli
