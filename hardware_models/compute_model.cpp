#include "hardware_models/compute_model.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"
#include "sim/time_overflow.hpp"

namespace cuboid::hw {

ComputeModel::ComputeModel(const GpuSpec& gpu, const HardwareProfile* profile, BytesPerSecond host_memory)
    : gpu_(gpu), profile_(profile), host_memory_(host_memory) {}

namespace {
// Fractions of the host link's raw rate that pinned-memory copies achieve, measured on one H100
// SXM over PCIe Gen5 x16 by cuboid-calibrate (hardware_models/profiles/h100-sxm-80gb-1gpu.yaml,
// host_copies: device to host 55.2 GB/s, host to device 51.0 GB/s of 63), taken for every GPU's
// host link that has no measured copy rate of its own (GpuSpec::host_copy_d2h).
constexpr double kDeviceToHostEfficiency = 55.1998 / 63.0;
constexpr double kHostToDeviceEfficiency = 50.9736 / 63.0;
}  // namespace

BytesPerSecond ComputeModel::host_rate(sim::OpKind kind) const {
    if (kind == sim::OpKind::DeviceToHost)
        return gpu_.host_copy_d2h.value > 0.0 ? gpu_.host_copy_d2h : gpu_.host_link_bandwidth * kDeviceToHostEfficiency;
    if (kind == sim::OpKind::HostToDevice)
        return gpu_.host_copy_h2d.value > 0.0 ? gpu_.host_copy_h2d : gpu_.host_link_bandwidth * kHostToDeviceEfficiency;
    if (!(host_memory_.value > 0.0))
        throw InputError({"", 0, "cluster.host_memory_gb_per_s"},
                         "an optimizer step offloaded to the host needs the host memory bandwidth; give the node's "
                         "(GB/s, what a STREAM copy achieves)");
    return host_memory_;
}

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
    const double eff = gpu_.gemm_curve(op.precision).at(op.flops.value) * shape_factor(op.shape.unpacked());
    return peak * eff;
}

FlopsPerSecond ComputeModel::attention_rate(const sim::Op& op) const {
    const bool backward = op.kind == sim::OpKind::FusedAttentionBackward;
    if (profile_)
        if (auto r = profile_->attention_rate(backward, op.shape.n, op.shape.k)) return *r;
    if (!gpu_.has_fused_attention())
        throw InputError({"", 0, "model.attention"},
                         fmt::format("{} has no fused attention kernel in the catalog (FlashAttention 2 and cuDNN's "
                                     "fused attention need Ampere or newer); use model.attention: unfused",
                                     gpu_.name));
    const EfficiencyCurve& curve = backward ? gpu_.attention_backward : gpu_.attention_forward;
    return checked_peak(op.precision) * curve.at(static_cast<double>(op.shape.n));
}

BytesPerSecond ComputeModel::memory_rate(sim::OpKind kind, Bytes bytes) const {
    if (sim::is_host_offload(kind)) return host_rate(kind);
    if (profile_)
        if (auto r = profile_->memory_rate(kind, bytes)) return *r;
    return gpu_.memory_bandwidth * gpu_.memory_efficiency.at(bytes.value);
}

// A dispatch op issues the op after it; its category is that op's, so the communication
// categories take the communication dispatch time.
Time ComputeModel::host_dispatch(const sim::Op& op) const {
    if (!profile_ || !profile_->host) return kTimeZero;
    const bool comm = sim::comm_class_of(op.category) >= 0;
    return comm ? profile_->host->communication : profile_->host->compute;
}

// Reads op.kind, category, precision, flops, bytes and shape: DurationMemo::Key must list every
// field read here (and in gemm_rate, memory_rate, host_dispatch).
Time ComputeModel::duration(const sim::Op& op) const {
    if (sim::is_communication(op.kind)) return kTimeZero;
    if (op.kind == sim::OpKind::HostDispatch) return host_dispatch(op);
    const Time launch = profile_ && profile_->kernel_launch ? *profile_->kernel_launch : gpu_.kernel_launch;
    Time memory = kTimeZero;
    if (op.bytes.value > 0.0) memory = checked_transfer_time(op.bytes, memory_rate(op.kind, op.bytes));
    Time math = kTimeZero;
    if (op.flops.value > 0.0) {
        const FlopsPerSecond rate = sim::is_gemm(op.kind)              ? gemm_rate(op)
                                    : sim::is_fused_attention(op.kind) ? attention_rate(op)
                                                                       : gpu_.peak_fp32;
        math = checked_compute_time(op.flops, rate);
    }
    return launch + std::max(math, memory);
}

DurationMemo::Key DurationMemo::Key::of(const sim::Op& op) {
    return {op.kind, op.category, op.precision, op.flops.value, op.bytes.value, op.shape};
}

// Compared against the op itself: a hit then copies nothing.
bool DurationMemo::Key::matches(const sim::Op& op) const {
    return kind == op.kind && category == op.category && precision == op.precision && flops == op.flops.value &&
           bytes == op.bytes.value && shape.m == op.shape.m && shape.n == op.shape.n && shape.k == op.shape.k &&
           shape.batch == op.shape.batch;
}

bool DurationMemo::Key::same_bits(const sim::Op& op) const {
    static_assert(sizeof(sim::PackedGemmShape) == 4 * sizeof(std::int32_t));
    return kind == op.kind && category == op.category && precision == op.precision &&
           std::memcmp(&flops, &op.flops.value, sizeof(double)) == 0 &&
           std::memcmp(&bytes, &op.bytes.value, sizeof(double)) == 0 &&
           std::memcmp(&shape, &op.shape, sizeof(sim::PackedGemmShape)) == 0;
}

// Bits of a double for hashing; -0 and +0 compare equal, so they must hash alike.
static std::uint64_t hash_bits(double x) { return x == 0.0 ? 0u : std::bit_cast<std::uint64_t>(x); }

// Hashes the sizes and the enums (equality checks the shape too; it rarely tells ops apart that
// the sizes do not), with splitmix64's finaliser so the low bits used as the slot index depend on
// every input bit (the low mantissa bits of round sizes are zeros).
static std::uint64_t hash_of(const sim::Op& op) {
    const std::uint64_t enums = static_cast<std::uint64_t>(op.kind) | static_cast<std::uint64_t>(op.category) << 8 |
                                static_cast<std::uint64_t>(op.precision) << 16;
    std::uint64_t x = hash_bits(op.bytes.value) ^ std::rotl(hash_bits(op.flops.value), 32) ^ enums;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

DurationMemo::DurationMemo(const ComputeModel& model, std::size_t labels)
    : model_(model), slots_(64), hints_(2 * labels, kNoHint) {}

DurationMemo::Slot& DurationMemo::slot_for(const sim::Op& op, std::uint64_t hash) {
    const std::size_t mask = slots_.size() - 1;  // the size is a power of two
    std::size_t i = hash & mask;
    while (slots_[i].used && !(slots_[i].hash == hash && slots_[i].key.matches(op))) i = (i + 1) & mask;
    return slots_[i];
}

void DurationMemo::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
        if (!s.used) continue;
        std::size_t i = s.hash & mask;  // the keys are distinct: the first free slot
        while (slots_[i].used) i = (i + 1) & mask;
        slots_[i] = s;
    }
    std::fill(hints_.begin(), hints_.end(), kNoHint);  // the slots moved
}

std::size_t DurationMemo::hint_index(const sim::Op& op) {
    return 2 * std::size_t{op.label} + (op.kind == sim::OpKind::HostDispatch ? 1 : 0);
}

std::size_t& DurationMemo::hint_for(const sim::Op& op) {
    const std::size_t i = hint_index(op);
    if (i >= hints_.size()) [[unlikely]]
        hints_.resize(i + 1, kNoHint);
    return hints_[i];
}

Time DurationMemo::duration(const sim::Op& op) {
    // Communication is free here (the transfer planner prices it) and is a large share of the
    // ops: it skips the table.
    if (sim::is_communication(op.kind)) return model_.duration(op);
    std::size_t& hint = hint_for(op);
    if (hint != kNoHint && slots_[hint].key.matches(op)) return slots_[hint].time;
    const std::uint64_t hash = hash_of(op);
    Slot& slot = slot_for(op, hash);
    if (!slot.used) {
        const Time t = model_.duration(op);  // may throw: the slot stays empty
        slot = {Key::of(op), hash, t, true};
        if (2 * ++size_ > slots_.size()) {
            grow();  // clears the hints: this op's is found again next time
            return t;
        }
    }
    hint = static_cast<std::size_t>(&slot - slots_.data());
    return slot.time;
}

void DurationMemo::append_durations(std::span<const sim::Op> ops, std::vector<Time>& out) {
    out.reserve(out.size() + ops.size());  // push_back, not resize: Time's resize sets each one apart
    for (const sim::Op& op : ops) {
        if (!sim::is_communication(op.kind)) {
            const std::size_t i = hint_index(op);
            if (i < hints_.size() && hints_[i] != kNoHint && slots_[hints_[i]].key.same_bits(op)) {
                out.push_back(slots_[hints_[i]].time);
                continue;
            }
        }
        out.push_back(duration(op));
    }
}

}  // namespace cuboid::hw
