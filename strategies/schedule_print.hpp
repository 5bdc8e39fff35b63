// The per-stage compute order of a scenario's pipeline schedule, printable: one line per stage,
//   s0: F0 F1 F2 F3 B0 F4 B1 Fc5 B2 ...
// in seed_algorithms §1.1's notation (F forward, Fc pre-checkpoint forward, R recompute before
// the gradient is awaited, B backward, or its input-gradient half under a zero-bubble schedule, W
// the weight-gradient half; ".c" names the model chunk when virtual_stages > 1).
#pragma once

#include <string>

#include "strategies/scenario.hpp"

namespace cuboid {

// Throws InputError when the plan is invalid (validate_plan).
std::string describe_schedule(const Scenario& scenario);

}  // namespace cuboid
