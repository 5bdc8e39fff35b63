// The size of one simulated iteration worked out from the plan's shape alone (GPUs, micro-batches,
// layers per stage), before the program, the partition or the topology is built: a plan that
// could not finish, or would not fit in memory, is refused with the estimate and the limit instead
// of running for hours or being killed by the kernel.
#pragma once

#include <string>

#include "strategies/scenario.hpp"
#include "strategies/work_limits.hpp"

namespace cuboid {

struct WorkEstimate {
    double ops_per_rank = 0.0;   // ops of one rank's iteration
    double events = 0.0;         // simulator events, every rank simulated (an upper bound when folded)
    double memory_bytes = 0.0;   // program, simulator state and stage partitioner
};

// `data`: the replicas of the weights per stage (data x context degree); `micro_batches`: the
// micro-batches per iteration.
WorkEstimate estimate_work(const Scenario& sc, int data, int micro_batches);

// The memory limit in effect: `limits.max_memory_bytes`, or the machine's physical memory.
double memory_limit_bytes(const WorkLimits& limits);

// InputError at the key that contributes most when the estimate exceeds sc.limits.
void check_work(const Scenario& sc, int data, int micro_batches);

}  // namespace cuboid
