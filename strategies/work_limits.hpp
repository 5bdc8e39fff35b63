// How much work one simulated iteration may take: set on the command line (--max-events,
// --max-memory), checked from the plan's shape before anything is built (work_estimate.hpp).
#pragma once

#include <cstdint>

namespace cuboid {

// Estimated events (work_estimate.cpp, an upper bound some 50 to 800 times the events taken): the
// largest shipped run (3,072 GPUs, 1T parameters) is estimated at 6.1e8, a 100,000-GPU iteration
// of 256 micro-batches at about 2.6e10; 1e11 still simulates in well under an hour.
inline constexpr double kDefaultMaxEvents = 1e11;

struct WorkLimits {
    double max_events = kDefaultMaxEvents;
    double max_memory_bytes = 0.0;  // 0: the physical memory of the machine
};

}  // namespace cuboid
