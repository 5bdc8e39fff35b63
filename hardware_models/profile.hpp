// A calibrated hardware profile: measured GEMM throughput by shape, memory-bound kernel bandwidth
// by kind and size, and alpha-beta costs of collectives, written by the calibration tool and named
// by a cluster's `profile` key. Where it has a measurement it replaces the catalog's curves.
// Format: docs/hardware_profile.md. The loader ignores unknown keys and is strict on types.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware_models/profile_host.hpp"
#include "sim/program.hpp"
#include "sim/units.hpp"

namespace cuboid::hw {

struct GemmSample {
    sim::Precision precision = sim::Precision::Bf16;
    std::int64_t m = 0, n = 0, k = 0;
    double tflops = 0.0;  // measured, per GPU
};

// A strided batched GEMM (attention's QK^T and PV): `batch` independent m x n x k products.
struct BatchedGemmSample {
    sim::Precision precision = sim::Precision::Bf16;
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
    double tflops = 0.0;  // measured, per GPU, over all batch products
};

// A fused attention kernel (cuDNN / FlashAttention), forward or backward: `keys` keys per query
// (causal), head dimension `head_dim`; tflops counts the FLOPs the kernel computes.
struct AttentionSample {
    bool backward = false;
    std::int64_t keys = 0;
    std::int64_t head_dim = 0;
    double tflops = 0.0;
};

struct MemorySample {
    std::string kind;     // "elementwise", "layer-norm", ... (see memory_kind_name)
    double bytes = 0.0;   // bytes moved by the kernel
    double gb_per_s = 0.0;
};

// One measured size of a collective: nccl-tests' `size` column (S, bytes) and its bus bandwidth.
struct BusBandwidthPoint {
    double bytes = 0.0;
    double bus_gb_per_s = 0.0;
};

// The time a profile charges for one collective call, split as the planner applies it: a fixed
// latency and the rest, spent moving bus bytes (see CollectiveSample::cost).
struct CollectiveCost {
    Time latency{0};
    double bandwidth_seconds = 0.0;
};

// time = alpha + bus_bytes / bus_bandwidth, bus_bytes as nccl-tests' busbw convention:
// all-reduce 2(P-1)/P*S, all-gather / reduce-scatter / all-to-all (P-1)/P*S, others S.
// With a `table` (optional), the measured bus bandwidth at those sizes replaces the line inside
// the measured range (docs/hardware_profile.md, "Collectives").
struct CollectiveSample {
    sim::OpKind kind = sim::OpKind::AllReduce;
    std::string algorithm = "auto";  // "auto" (what the library chose), "ring", "tree", ...
    int ranks = 0;
    // Nodes the measured group spanned (1: inside one node); 0: not recorded, any placement.
    // A node-local measurement must not price a group of the same size spread over nodes.
    int nodes = 0;
    Time alpha{0};
    double bus_gb_per_s = 0.0;
    std::vector<BusBandwidthPoint> table;  // ascending bytes; empty: the alpha-beta line only

    // Cost of one call on a buffer of `bytes` (S). Without a table: {alpha, bus_bytes / busbw}.
    // With one, inside the measured sizes the time is interpolated linearly in (log S, log time)
    // between the two neighbouring points (exact at a point, monotone between two); beyond the
    // largest it grows at the fitted bus bandwidth from the last point, below the smallest it
    // falls at that bandwidth towards alpha. The latency is then min(alpha, time).
    CollectiveCost cost(double bytes) const;
};

struct HardwareProfile {
    std::map<std::string, std::string> metadata;  // gpu, date, host, software versions, command
    std::optional<Time> kernel_launch;
    std::vector<GemmSample> gemm;
    std::vector<BatchedGemmSample> batched_gemm;
    std::vector<MemorySample> memory;
    std::vector<AttentionSample> attention;
    std::vector<CollectiveSample> collectives;
    // Framework dispatch on the host (profile_host.hpp); none: the GPU never waits for its host.
    std::optional<HostDispatchCosts> host;

    static HardwareProfile load(const std::string& path);
    static HardwareProfile parse(const std::string& text, const std::string& file);

    // Measured rate for this GEMM shape: trilinear interpolation in (log m, log n, log k) inside
    // the measured grid, else the nearest measured shape in that space; none for an unmeasured
    // precision.
    std::optional<FlopsPerSecond> gemm_rate(sim::Precision p, std::int64_t m, std::int64_t n,
                                            std::int64_t k) const;
    // Measured rate of a batched GEMM: the two measured shapes nearest in (log m, log n, log k,
    // log batch), weighted by inverse squared distance (exact on a measured shape); none without
    // batched measurements of that precision (the caller then uses gemm_rate with m x batch rows).
    std::optional<FlopsPerSecond> batched_gemm_rate(sim::Precision p, std::int64_t m, std::int64_t n,
                                                    std::int64_t k, std::int64_t batch) const;
    // Measured rate of a fused attention kernel: the samples of that direction with the head
    // dimension nearest `head_dim`, interpolated in log(keys) and clamped at the ends; none
    // without samples of that direction.
    std::optional<FlopsPerSecond> attention_rate(bool backward, std::int64_t keys, std::int64_t head_dim) const;
    // Measured bandwidth of a memory-bound kernel kind (falling back to "elementwise"),
    // interpolated in log(bytes) and clamped at the ends.
    std::optional<BytesPerSecond> memory_rate(sim::OpKind kind, Bytes bytes) const;
    // The measurement for this collective on `ranks` ranks spread over `nodes` nodes: a sample
    // recorded on that many nodes before one without placement, then `algorithm` before "auto".
    const CollectiveSample* collective(sim::OpKind kind, int ranks, int nodes, const std::string& algorithm) const;
};

const char* memory_kind_name(sim::OpKind kind);      // "layer-norm", ...
const char* collective_kind_name(sim::OpKind kind);  // "all-reduce", ... (send/recv: "send-recv")

}  // namespace cuboid::hw
