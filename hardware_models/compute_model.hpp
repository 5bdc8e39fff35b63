// Duration of one compute op on one GPU: a roofline with measured efficiencies.
//
//   GEMM:         launch + max(F / (peak(precision) * eff_gemm(F) * shape(m,n,k)),
//                              B / (hbm * eff_mem(B)))
//   memory-bound: launch + max(B / (hbm * eff_mem(B)), F / peak_fp32)
//
// F = the op's FLOPs (for a batched GEMM, all its products: one kernel launch fills the GPU with
// every product's tiles, so the size on the efficiency curve is the kernel's total work), B = HBM
// bytes it moves. eff_gemm is the GPU's measured curve for the precision (catalog gpus.yaml,
// hardware.md §2.2), measured on square shapes. shape() is the tile padding a skinny GEMM pays
// and the square ones of the curve do not: tensor-core kernels compute whole output tiles (128 x 128
// is cuBLAS's common tile) over K slices of 64, so a dimension x costs ceil(x/t)*t:
//   shape = m/ceil128(m) * n/ceil128(n) * k/ceil64(k).
// Check against hardware.md §2.2: the skinny 802816x192x768 A100 GEMM (2.37e11 FLOPs, curve
// ~0.75, n: 192/256) gives 0.56 against 0.51 measured.
// Fused attention (FlashAttention, cuDNN): launch + F / (peak(16 bit) * eff_attn(keys)), with the
// forward or backward curve of the GPU (catalog attention_efficiency) at the keys each query
// attends to; the kernel keeps its tiles on chip, so its HBM traffic (Q, K, V, O and their
// gradients) is far below the roofline's ridge and is not priced.
// Vector work (memory-bound kinds) runs on the CUDA cores: the FP32 non-tensor peak bounds it.
// A precision the GPU has no peak for (fp8 before Hopper) is an InputError, not a silent fallback:
// the training would not run on that GPU.
// With a calibrated profile, measured GEMM rates and kernel bandwidths replace the curves where
// they exist (hardware_models/profile.hpp), and its `host:` section prices the HostDispatch ops
// (CPU time, no roofline: profile_host.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hardware_models/gpu_spec.hpp"
#include "hardware_models/profile.hpp"
#include "sim/program.hpp"

namespace cuboid::hw {

inline constexpr std::int64_t kGemmTileMn = 128;  // output tile edge (cuBLAS/CUTLASS common tile)
inline constexpr std::int64_t kGemmTileK = 64;    // K slice per main-loop iteration

class ComputeModel {
public:
    // `profile` may be null; both must outlive the model.
    // `host_memory`: the host memory bandwidth one GPU's process gets (the node's over its GPUs),
    // zero when unknown (an offloaded optimizer step then cannot be priced).
    ComputeModel(const GpuSpec& gpu, const HardwareProfile* profile, BytesPerSecond host_memory = BytesPerSecond(0.0));

    Time duration(const sim::Op& op) const;
    // Host time of a HostDispatch op (the profile's `host:` section; zero without one).
    Time host_dispatch(const sim::Op& op) const;

    // Achieved rate of a GEMM op (catalog curve x shape, or the profile's measurement).
    FlopsPerSecond gemm_rate(const sim::Op& op) const;
    // Achieved rate of a fused attention kernel (the catalog's attention curve at the op's keys
    // per query, or the profile's measurement).
    FlopsPerSecond attention_rate(const sim::Op& op) const;
    // Achieved HBM bandwidth for a kernel of this kind moving `bytes`.
    BytesPerSecond memory_rate(sim::OpKind kind, Bytes bytes) const;

    // Tile-padding efficiency of a product's shape, 1 for multiples of the tiles.
    static double shape_factor(const sim::GemmShape& shape);

private:
    FlopsPerSecond checked_peak(sim::Precision p) const;

    // The rate of an optimizer offload's copy over the host link or of its host Adam.
    BytesPerSecond host_rate(sim::OpKind kind) const;

    const GpuSpec& gpu_;
    const HardwareProfile* profile_;
    BytesPerSecond host_memory_;
};

// Prices each distinct op once: the ops of one op list repeat the same few dozen shapes (every
// layer, every micro-batch), and a duration costs logarithms and, with a profile, interpolation
// in its measurements. Two ops equal in every field duration() reads get the same duration, so
// the memo changes no result. It is meant to live for one pricing pass on one thread (no locks);
// the model must outlive it.
class DurationMemo {
public:
    // `labels`: the program's label count, if known (sizes the hints once).
    explicit DurationMemo(const ComputeModel& model, std::size_t labels = 0);

    Time duration(const sim::Op& op);
    // duration() of each of `ops`, appended to `out`: one call per op list, so that the common
    // case (the op equals the last one of its label) is a few compares in a loop, not a call.
    void append_durations(std::span<const sim::Op> ops, std::vector<Time>& out);
    // Distinct compute ops priced so far.
    std::size_t size() const { return size_; }

    // Exactly the fields ComputeModel::duration reads: kind (routing, memory_rate), category
    // (host_dispatch), precision, FLOPs and shape (gemm_rate) and bytes (memory_rate).
    struct Key {
        sim::OpKind kind = sim::OpKind::Elementwise;
        sim::OpCategory category = sim::OpCategory::Compute;
        sim::Precision precision = sim::Precision::Bf16;
        double flops = 0.0;
        double bytes = 0.0;
        sim::PackedGemmShape shape{};

        static Key of(const sim::Op& op);
        bool matches(const sim::Op& op) const;
        // The same fields bit for bit: implies matches() (a NaN, which matches nothing, is
        // priced alike either way), in a few wide compares.
        bool same_bits(const sim::Op& op) const;
    };

private:
    struct Slot {
        Key key;
        std::uint64_t hash = 0;  // compared before the key: most probes then cost one compare
        Time time{0};
        bool used = false;
    };

    // The slot holding `op`'s key, or the empty slot where it belongs.
    Slot& slot_for(const sim::Op& op, std::uint64_t hash);
    // Doubles the table and re-places every entry.
    void grow();

    // Where the last op of each (label, dispatch or not) was found. Ops of one label (say
    // "F.qkv" in every layer and micro-batch) are nearly always equal, and a dispatch op carries
    // its op's label, hence the two hints per label: a hit is one key comparison and no hash. A
    // hint is only a guess, confirmed by the full key, so it changes no result.
    static std::size_t hint_index(const sim::Op& op);
    std::size_t& hint_for(const sim::Op& op);  // hints_[hint_index(op)], grown to hold it

    const ComputeModel& model_;
    // Open addressing with linear probing, at most half full: a lookup is one hash and usually
    // one key comparison (std::unordered_map with std::hash<double> saved under a tenth of the
    // pricing time: its node chasing and byte hashing cost nearly what a duration does).
    std::vector<Slot> slots_;
    std::size_t size_ = 0;
    static constexpr std::size_t kNoHint = ~std::size_t{0};
    std::vector<std::size_t> hints_;  // slot index per 2 * label + (dispatch op), kNoHint if none
};

}  // namespace cuboid::hw
