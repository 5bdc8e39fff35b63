#include "hardware_models/gpu_spec.hpp"

#include <algorithm>
#include <cmath>

namespace cuboid::hw {

// Piecewise linear in log(size): GEMM and kernel efficiencies change by octaves of problem size
// (measured at 1024^3, 2048^3, ... in hardware.md §2.2), so log spacing is the natural axis.
double EfficiencyCurve::at(double size) const {
    if (points.empty()) return 1.0;
    if (size <= points.front().size) return points.front().efficiency;
    if (size >= points.back().size) return points.back().efficiency;
    const auto upper = std::upper_bound(points.begin(), points.end(), size,
                                        [](double s, const Point& p) { return s < p.size; });
    const Point& hi = *upper;
    const Point& lo = *(upper - 1);
    const double t = std::log(size / lo.size) / std::log(hi.size / lo.size);
    return lo.efficiency + t * (hi.efficiency - lo.efficiency);
}

FlopsPerSecond GpuSpec::peak(sim::Precision p) const {
    switch (p) {
        case sim::Precision::Fp32: return peak_fp32;
        case sim::Precision::Tf32: return peak_tf32;
        case sim::Precision::Fp16: return peak_fp16;
        case sim::Precision::Bf16: return peak_bf16;
        case sim::Precision::Fp8: return peak_fp8;
    }
    return peak_fp32;
}

const EfficiencyCurve& GpuSpec::gemm_curve(sim::Precision p) const {
    for (const auto& [precision, curve] : gemm_efficiency_by_precision)
        if (precision == p) return curve;
    return gemm_efficiency;
}

const char* precision_name(sim::Precision p) {
    switch (p) {
        case sim::Precision::Fp32: return "fp32";
        case sim::Precision::Tf32: return "tf32";
        case sim::Precision::Fp16: return "fp16";
        case sim::Precision::Bf16: return "bf16";
        case sim::Precision::Fp8: return "fp8";
    }
    return "fp32";
}

}  // namespace cuboid::hw
