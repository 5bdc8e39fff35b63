// The single-GPU measurements are taken in several passes over the whole grid, and each point
// keeps the median of its passes. A point is timed over a few milliseconds; on an H100 SXM about
// one point in thirty came out 5-15x slower than in a repeated run (whole points, not single
// batches, so the per-point median of batches keeps them), and which points were hit changed from
// run to run: an interference of milliseconds, not a property of the kernel. Passes minutes apart
// are independent, so the median of three removes such a point unless two passes are both hit.
#pragma once

#include <vector>

#include "calibrate/fit/measurements.hpp"

namespace cuboid::calibrate {

// Per point, the median seconds over `passes` (same device, same plan, so the same points in the
// same order; throws std::logic_error otherwise). Launch figures are merged likewise; notes are
// kept once; collectives and device information come from the first pass.
Measurements median_of_passes(const std::vector<Measurements>& passes);

}  // namespace cuboid::calibrate
