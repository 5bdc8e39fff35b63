#include "hardware_models/compute_model.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"

namespace cuboid::hw {

ComputeModel::ComputeModel(const GpuSpec& gpu, const HardwareProfile* profile)
    : gpu_(gpu), profile_(profile) {}

static double padded_fraction(std::int64_t x, std::int64_t tile) {
    if (x <= 0) return 1.0;
    const std::int64_t padded = (x + tile - 1) / tile * tile;
    return static_cast<double>(x) / static_cast<double>(padded);
}

double ComputeModel::shape_factor(const sim::GemmShape& s) {
    return padded_fraction(s.m, kGemmTileMn) * padded_fraction(s.n, kGemmTileMn) *
           padded_fraction(s.k, kGemmTileK);
}

FlopsPerSecond ComputeModel::checked_peak(sim::Precision p) const {
    const FlopsPerSecond peak = gpu_.peak(p);
    if (peak.value <= 0.0)
        throw InputError({"", 0, "training.precision"},
                         fmt::format("{} has no {} support (no peak in the GPU catalog); use fp16 or bf16",
                                     gpu_.name, precision_name(p)));
    return peak;
}

FlopsPerSecond ComputeModel::gemm_rate(const sim::Op& op) const {
    const FlopsPerSecond peak = checked_peak(op.precision);
    if (profile_) {
        if (op.kind == sim::OpKind::BatchedGemm && op.shape.batch > 1)
            if (auto r = profile_->batched_gemm_rate(op.precision, op.shape.m, op.shape.n, op.shape.k, op.shape.batch))
                return *r;
        const std::int64_t rows = op.shape.m * std::max<std::int64_t>(op.shape.batch, 1);
        if (auto r = profile_->gemm_rate(op.precision, rows, op.shape.n, op.shape.k)) return *r;
    }
    const double eff = gpu_.gemm_curve(op.precision).at(op.flops.value) * shape_factor(op.shape);
    return peak * eff;
}

BytesPerSecond ComputeModel::memory_rate(sim::OpKind kind, Bytes bytes) const {
    if (profile_)
        if (auto r = profile_->memory_rate(kind, bytes)) return *r;
    return gpu_.memory_bandwidth * gpu_.memory_efficiency.at(bytes.value);
}

// A dispatch op issues the op after it; its category is that op's, so the communication
// categories take the communication dispatch time.
Time ComputeModel::host_dispatch(const sim::Op& op) const {
    if (!profile_ || !profile_->host) return kTimeZero;
    const bool comm = op.category == sim::OpCategory::TensorComm || op.category == sim::OpCategory::PipelineComm ||
                      op.category == sim::OpCategory::DataComm;
    return comm ? profile_->host->communication : profile_->host->compute;
}

Time ComputeModel::duration(const sim::Op& op) const {
    if (sim::is_communication(op.kind)) return kTimeZero;
    if (op.kind == sim::OpKind::HostDispatch) return host_dispatch(op);
    const Time launch = profile_ && profile_->kernel_launch ? *profile_->kernel_launch : gpu_.kernel_launch;
    Time memory = kTimeZero;
    if (op.bytes.value > 0.0) memory = transfer_time(op.bytes, memory_rate(op.kind, op.bytes));
    Time math = kTimeZero;
    if (op.flops.value > 0.0) {
        const FlopsPerSecond rate = sim::is_gemm(op.kind) ? gemm_rate(op) : gpu_.peak_fp32;
        math = compute_time(op.flops, rate);
    }
    return launch + std::max(math, memory);
}

}  // namespace cuboid::hw
