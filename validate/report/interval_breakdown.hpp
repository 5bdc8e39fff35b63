// The simulator's iteration breakdown (docs/simulator.md, "Iteration breakdown") computed from
// measured op intervals of one rank, so that predicted and measured parts mean the same thing:
// while the compute stream runs a compute op its time is compute (recompute for Recompute-category
// ops); while it is idle the time goes to the communication in flight of the first class
// (strategies/program_streams.hpp: tensor > context > expert > pipeline > data), else
// to the bubble. The parts add up to the rank's finish (its last op's end, time 0 = iteration
// start).
//
// One difference remains: a measured communication interval starts when the op is enqueued and
// ready on its stream, so waiting for slower peers counts as communication here, and as bubble in
// the simulator (which starts a communication when every member has posted it).
#pragma once

#include <vector>

#include "sim/program.hpp"
#include "validate/report/figures.hpp"

namespace cuboid::validate {

struct Interval {
    double start_s = 0.0;
    double end_s = 0.0;
};

// `intervals[i]` is op i of `list`; ops with end <= start take no time.
PartTimes interval_breakdown(const sim::OpList& list, const std::vector<Interval>& intervals);

}  // namespace cuboid::validate
