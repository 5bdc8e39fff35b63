// HBM bytes each memory-bound kernel of memory_kernels.cuh moves per element (the figure its
// bandwidth is quoted against), and what Adam's operands occupy. Plain C++17 and in one place:
// the calibration measures the kernels at these counts, the GPU executor sizes them to an op's
// bytes with them, and the execution plan decides from them where Adam runs.
#pragma once

namespace cuboid::calibrate::kernel_bytes {

constexpr double kCopy = 4.0;         // bf16 in and out
constexpr double kResidualAdd = 6.0;  // two bf16 in, one out
constexpr double kSwiglu = 6.0;       // gate and up in, one out
constexpr double kGelu = 4.0;         // bf16 in and out
constexpr double kLayerNorm = 4.0;    // bf16 in and out (gamma, beta: one row, cached)
constexpr double kSoftmax = 4.0;      // bf16 in and out
constexpr double kDropout = 5.0;      // bf16 in and out, one byte of mask
constexpr double kAdam = 28.0;        // fp32 w, g, m, v read; w, m, v written
constexpr double kAdamState = 16.0;   // fp32 w, g, m, v held per parameter

}  // namespace cuboid::calibrate::kernel_bytes
