// One GPU model of the catalog: datasheet peaks and measured efficiencies, each with a source in
// the catalog file (hardware_models/catalog/gpus.yaml).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hardware_models/cluster_spec.hpp"
#include "sim/program.hpp"
#include "sim/units.hpp"

namespace cuboid::hw {

// Achieved fraction of peak as a function of problem size, interpolated in log(size) between
// points; clamped at the ends.
struct EfficiencyCurve {
    struct Point {
        double size = 0.0;        // GEMM: FLOPs of one kernel; memory-bound: bytes moved
        double efficiency = 0.0;  // fraction of peak, 0..1
    };
    std::vector<Point> points;  // ascending size
    double at(double size) const;
};

struct GpuSpec {
    std::string name;                 // catalog name: "a100-sxm-80gb"
    std::string architecture;         // "ampere", "hopper", ...
    FlopsPerSecond peak_fp32{0.0};    // dense, no sparsity
    FlopsPerSecond peak_tf32{0.0};
    FlopsPerSecond peak_fp16{0.0};
    FlopsPerSecond peak_bf16{0.0};
    FlopsPerSecond peak_fp8{0.0};     // 0: not supported
    Bytes memory_capacity{0.0};
    BytesPerSecond memory_bandwidth{0.0};
    int sm_count = 0;
    double tdp_watts = 0.0;
    BytesPerSecond scaleup_bandwidth{0.0};  // NVLink/Infinity Fabric per GPU, one direction
    EfficiencyCurve gemm_efficiency;        // fraction of the precision's peak vs GEMM FLOPs
    EfficiencyCurve memory_efficiency;      // fraction of HBM bandwidth vs bytes moved
    Time kernel_launch{0};                  // fixed cost of one kernel

    std::vector<std::string> aliases;       // other names the catalog accepts
    std::string description;                // one line for `cuboid list gpus`
    std::string source;                     // where the figures come from
    BytesPerSecond host_link_bandwidth{0.0};  // PCIe x16 to host / NIC, one direction
    // Measured pinned-memory copy rates between the GPU and host memory, where they do not go
    // over host_link_bandwidth (GB200's NVLink-C2C to Grace); 0: that link at the fractions
    // cuboid-calibrate measured on an H100 over PCIe (compute_model.cpp).
    BytesPerSecond host_copy_d2h{0.0}, host_copy_h2d{0.0};
    // Curves measured at another precision (fp8, fp32, ...); others use gemm_efficiency.
    std::vector<std::pair<sim::Precision, EfficiencyCurve>> gemm_efficiency_by_precision;
    // Fused attention kernels (FlashAttention / cuDNN): fraction of the 16-bit peak vs keys each
    // query attends to; empty: the GPU has no fused attention kernel.
    EfficiencyCurve attention_forward;
    EfficiencyCurve attention_backward;
    bool has_fused_attention() const { return !attention_forward.points.empty(); }
    // The rack-scale system the GPU ships in, if it ships only in one (GB200, GB300).
    std::optional<GpuSystem> system;

    FlopsPerSecond peak(sim::Precision p) const;
    const EfficiencyCurve& gemm_curve(sim::Precision p) const;
};

// "fp32" | "tf32" | "fp16" | "bf16" | "fp8".
const char* precision_name(sim::Precision p);

}  // namespace cuboid::hw
