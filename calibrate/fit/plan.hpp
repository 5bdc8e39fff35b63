// What one calibration run measures: the GEMM grid, the memory-bound kernels and sizes, the
// collectives, group sizes and message sizes, and an estimate of how long it takes. Plain C++17
// (the CUDA sweeps read it); `--dry-run` prints it without touching a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuboid::calibrate {

struct PlanOptions {
    bool quick = false;  // reduced grid, ~1-2 minutes
    int gpus = 8;        // GPUs of the node (for the collective group sizes)
    bool fp8 = true;     // the device has compute capability >= 8.9
};

struct GemmDims {
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
};

struct Plan {
    int warmup = 3;                   // untimed runs before timing (clocks, caches, heuristics)
    int repeats = 10;                 // timed batches; the median is kept
    double min_batch_seconds = 2e-4;  // a timed batch repeats short kernels up to this long
    std::vector<std::string> gemm_precisions;     // "fp16", "bf16", "tf32", "fp8"
    std::vector<GemmDims> gemm;                   // full cartesian grid m x n x k
    std::vector<std::string> batched_precisions;
    std::vector<GemmDims> batched;                // attention: QK^T (s,s,d) and PV (s,d,s)
    std::vector<std::string> memory_kernels;
    std::vector<double> memory_bytes;             // bytes moved per kernel call
    std::vector<std::string> collectives;         // profile names
    std::vector<int> group_sizes;                 // ranks per communicator
    std::vector<double> collective_bytes;         // S per call
    std::vector<double> copy_bytes;               // host <-> device, pinned
};

// Group sizes measured on a node of `gpus`: 2, 4, 8, ... up to gpus, and gpus itself.
std::vector<int> group_sizes_for(int gpus);

Plan make_plan(const PlanOptions& options);

// Rough duration in seconds on an H100-class GPU (rates of hardware.md §2.2, §2.3, §5.1:
// bf16 ~700 TFLOP/s, tf32 ~350, fp8 ~1200, HBM ~2.8 TB/s, NVLink bus ~350 GB/s, PCIe ~25 GB/s,
// and ~25 us per timed call of setup). An estimate for planning, not a prediction.
double estimate_seconds(const Plan& plan);

// Multi-line summary: counts of shapes and sizes, ranges, the estimate.
std::string describe(const Plan& plan);

}  // namespace cuboid::calibrate
