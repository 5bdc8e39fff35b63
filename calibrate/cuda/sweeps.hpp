// The measurement passes of cuboid-calibrate; each appends to `out` (and to out.notes what it
// skipped and why). C++17 declarations, implemented in the CUDA sources of this folder.
#pragma once

#include <string>

#include "calibrate/fit/measurements.hpp"
#include "calibrate/fit/plan.hpp"

namespace cuboid::calibrate {

// Number of visible CUDA devices; 0 with the reason in `why` when there is none or the runtime
// fails (no driver, CUDA_VISIBLE_DEVICES empty).
int visible_devices(std::string& why);
DeviceInfo query_device(int device, int device_count);

void measure_launch(int device, const Plan& plan, Measurements& out);
void measure_host_copies(int device, const Plan& plan, Measurements& out);
void measure_gemms(int device, const Plan& plan, Measurements& out);
void measure_memory_kernels(int device, const Plan& plan, Measurements& out);
// NCCL over the first g GPUs of the node for each group size g of the plan (single process,
// ncclCommInitAll, one host thread per GPU).
void measure_collectives(const Plan& plan, int device_count, Measurements& out);

}  // namespace cuboid::calibrate
