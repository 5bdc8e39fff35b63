// Raw measurements of one calibration run, as the timing code reports them: medians of repeated
// runs in seconds, sizes in bytes. Plain C++17 (no simulator headers) because the CUDA sources,
// compiled as C++17 by nvcc, fill these structs; the fitting code turns them into a profile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuboid::calibrate {

struct DeviceInfo {
    std::string name;             // cudaDeviceProp::name, "NVIDIA H100 80GB HBM3"
    int sm_count = 0;
    int cc_major = 0, cc_minor = 0;
    double memory_bytes = 0.0;
    int device_count = 0;         // GPUs visible in this node
    std::string driver;           // "13.0" (cudaDriverGetVersion)
    std::string cuda_runtime;     // "13.0" (cudaRuntimeGetVersion)
    std::string cublas;           // "13.0.0"
    std::string nccl;             // "2.28.3", empty without NCCL
};

struct GemmPoint {
    std::string precision;        // "fp16" | "bf16" | "tf32" | "fp8"
    std::int64_t m = 0, n = 0, k = 0;
    std::int64_t batch = 1;       // > 1: strided batched (attention)
    double seconds = 0.0;         // median time of one kernel, back to back
};

struct MemoryPoint {
    std::string kernel;           // "layer-norm", "softmax", "gelu", "swiglu", "dropout", ...
    double bytes = 0.0;           // HBM bytes the kernel reads + writes
    double seconds = 0.0;
};

struct CollectivePoint {
    std::string kind;             // "all-reduce", ..., "send-recv" (profile names)
    int ranks = 0;
    double bytes = 0.0;           // S as in hardware_models/collectives.hpp
    double seconds = 0.0;         // median over trials, slowest rank
    int nodes = 1;                // nodes the group spans (mpirun across nodes: > 1)
    std::string algorithm = "auto";  // "auto": NCCL's own choice; "ring", "tree": forced (NCCL_ALGO)
};

struct CopyPoint {
    std::string direction;        // "h2d" | "d2h" (pinned host memory)
    double bytes = 0.0;
    double seconds = 0.0;
};

struct Measurements {
    DeviceInfo device;
    std::optional<double> launch_seconds;       // empty kernels back to back, per kernel
    std::optional<double> launch_sync_seconds;  // one launch + synchronize, host clock
    std::vector<GemmPoint> gemm;                // batch == 1
    std::vector<GemmPoint> batched_gemm;        // batch > 1
    std::vector<MemoryPoint> memory;
    std::vector<CollectivePoint> collectives;
    std::vector<CopyPoint> copies;
    std::vector<std::string> notes;             // what was skipped and why
};

}  // namespace cuboid::calibrate
