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
    int nodes = 1;       // nodes of an mpirun across nodes (> 1: cross-node groups too)
};

struct GemmDims {
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
};

// A communicator across nodes: the first `gpus_per_node` GPUs of each of the first `nodes` nodes.
struct NodeGroup {
    int nodes = 2;
    int gpus_per_node = 1;
    int ranks() const { return nodes * gpus_per_node; }
};

struct Plan {
    int warmup = 3;                   // untimed runs before timing (clocks, caches, heuristics)
    int repeats = 10;                 // timed batches; the median is kept
    double min_batch_seconds = 2e-4;  // a timed batch repeats short kernels up to this long
    // Before timing, the work is repeated until the GPU has been busy this long: an idle GPU
    // lowers its clock (an H100 idles at 345 MHz against 1980 MHz boost) and short kernels timed
    // right after a pause would see it; in training the GPU never idles.
    double busy_warmup_seconds = 0.005;
    // The single-GPU passes (launch, GEMMs, memory kernels, copies) are run this many times and
    // each point keeps the median of its passes (calibrate/fit/passes.hpp says why).
    int passes = 3;
    std::vector<std::string> gemm_precisions;     // "fp16", "bf16", "tf32", "fp8"
    std::vector<GemmDims> gemm;                   // full cartesian grid m x n x k
    std::vector<std::string> batched_precisions;
    std::vector<GemmDims> batched;                // attention: QK^T (s,s,d) and PV (s,d,s)
    std::vector<std::string> memory_kernels;
    std::vector<double> memory_bytes;             // bytes moved per kernel call
    // Adam only, beyond memory_bytes: the optimizer step of a whole stage touches tens of GiB of
    // state at once, and on an H100 such a step ran 30 % slower than a 4 GiB one. Sizes whose
    // state would not fit in half the GPU's memory are skipped on the GPU.
    std::vector<double> optimizer_bytes;
    std::vector<std::string> collectives;         // profile names
    std::vector<int> group_sizes;                 // ranks per communicator inside one node
    std::vector<NodeGroup> node_groups;           // communicators across nodes (mpirun)
    std::vector<double> collective_bytes;         // S per call
    // Besides NCCL's own choice ("auto"), each collective again with the algorithm forced
    // (NCCL_ALGO at communicator creation), so the profile has a fit per algorithm.
    std::vector<std::string> forced_algorithms;   // "ring", "tree"
    std::vector<double> copy_bytes;               // host <-> device, pinned
};

// Whether NCCL runs collective `kind` with forced `algorithm` ("auto" always; ring: every
// collective but all-to-all and send/recv, which are point-to-point; tree: all-reduce only).
bool algorithm_applies(const std::string& algorithm, const std::string& kind);
// NCCL_ALGO's spelling of a forced algorithm ("ring" -> "Ring").
std::string nccl_algo_name(const std::string& algorithm);

// Group sizes measured on a node of `gpus`: 2, 4, 8, ... up to gpus, and gpus itself.
std::vector<int> group_sizes_for(int gpus);

// Groups across `nodes` nodes of `gpus` GPUs: for n = 2, 4, 8, ... up to nodes (and nodes itself),
// one GPU per node (the shape of a data-parallel group when tensor x pipeline ranks fill a node)
// and every GPU of the n nodes (a data-parallel group of a plan with t x p below the node size).
std::vector<NodeGroup> node_groups_for(int nodes, int gpus);

Plan make_plan(const PlanOptions& options);

// Rough duration in seconds on an H100-class GPU (rates of hardware.md §2.2, §2.3, §5.1:
// bf16 ~700 TFLOP/s, tf32 ~350, fp8 ~1200, HBM ~2.8 TB/s, NVLink bus ~350 GB/s, PCIe ~25 GB/s,
// and ~25 us per timed call of setup). An estimate for planning, not a prediction.
double estimate_seconds(const Plan& plan);

// Multi-line summary: counts of shapes and sizes, ranges, the estimate.
std::string describe(const Plan& plan);

}  // namespace cuboid::calibrate
