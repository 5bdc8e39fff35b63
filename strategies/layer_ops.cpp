#include "strategies/layer_ops.hpp"

#include <algorithm>
#include <vector>

#include "strategies/context_attention.hpp"
#include "strategies/mla_layer.hpp"
#include "strategies/moe_layer.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/tensor_modes/mode_layer.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t idx(LayerOp op) { return static_cast<std::size_t>(op); }

// HBM bytes of the memory-bound forward kernels (read inputs + write outputs); their backward
// moves about twice as much (reads the saved input and the output gradient, writes the input
// gradient).
double forward_bytes(const LayerContext& c, LayerOp op) {
    const LayerDims& d = c.dims;
    const double a = d.act_bytes;
    const double region = c.bsh() / d.sp_div();
    const double scores = static_cast<double>(d.b * d.heads) * static_cast<double>(d.s * d.attended()) / static_cast<double>(d.t);
    const double ffn = static_cast<double>(d.tokens() * d.ffn) / static_cast<double>(d.t);
    switch (op) {
        case LayerOp::Ln1:
        case LayerOp::Ln2: return 2.0 * a * region;
        case LayerOp::Softmax: return 2.0 * a * scores;
        case LayerOp::AttnDropout: return (2.0 * a + 1.0) * scores;       // in, out, mask
        case LayerOp::Bda1:
        case LayerOp::Bda2: return (3.0 * a + (d.hidden_dropout ? 1.0 : 0.0)) * region;  // x, residual, out, mask
        case LayerOp::Act: return (d.swiglu ? 3.0 : 2.0) * a * ffn;      // gate+up in, out
        case LayerOp::Rope: {                                           // Q and K in, out
            const double qk = static_cast<double>(d.tokens() * (d.heads + d.kv_heads) * d.head_dim) / static_cast<double>(d.t);
            return 2.0 * a * qk;
        }
        default: return 0.0;
    }
}

// Transformer Engine under fp8 (LayerDims::te_kernels, fp8): the linear layers' GEMMs take fp8
// operands, so each 16-bit tensor a GEMM reads is cast first, with its transpose written beside
// it for the other backward GEMM (TE's cast_transpose kernels; the amax the scaling needs is
// reduced in the same pass). Where TE fuses the cast into the kernel before, nothing is added:
// LayerNorm writes the QKV and FC1 inputs in fp8, the activation writes FC2's input and its
// backward FC1's output gradient. The weights are cast once per iteration (TE caches them across
// micro-batches) and are not priced.
bool te_fp8(const LayerDims& d) { return d.te_kernels && d.fp8; }
bool is_linear(LayerOp op) {
    return op == LayerOp::Qkv || op == LayerOp::Proj || op == LayerOp::Fc1 || op == LayerOp::Fc2;
}
// The recipes' quantization passes (training.fp8_recipe), as Transformer Engine 2.x runs them
// (the normalization, activation and cast extensions of its PyTorch module).
constexpr double kMxScaleBytes = 1.0 / 32.0;  // MXFP8: one E8M0 scale byte per block of 32 elements

// Bytes of quantizing `elements` 16-bit values that no kernel before wrote in fp8 (the projection's
// input, an output gradient), with the transpose the other GEMM needs. Delayed: read once, write
// the fp8 tensor and its transpose (the amax is reduced in the same pass). Current: an amax pass
// over the input first (nvte_compute_amax), then the same cast. MXFP8: read once, write both
// orientations, each with its block scales (a transpose cannot reuse the row-wise scales).
double quantize_bytes(const LayerDims& d, double elements) {
    const double a = d.act_bytes;
    switch (d.fp8_recipe) {
        case Fp8Recipe::Delayed: break;
        case Fp8Recipe::Current: return (2.0 * a + 2.0) * elements;
        case Fp8Recipe::Mxfp8: return (a + 2.0 * (1.0 + kMxScaleBytes)) * elements;
    }
    return (a + 2.0) * elements;
}

// Where the delayed recipe needs no cast because the kernel before writes fp8 itself (LayerNorm
// for the QKV and FC1 inputs, the activation for FC2's input and, backward, for FC1's output
// gradient), the other recipes may: current scaling needs the whole tensor's amax before it can
// scale, so the kernel writes 16 bits with the amax and a cast follows (row-wise forward, the
// transpose coming before the weight gradient as under delayed; both orientations for the
// gradient); MXFP8 quantizes in the activation kernels but not in LayerNorm, whose 16-bit output
// is then cast to both orientations with their scales. 0: no cast.
double producer_cast_bytes(const LayerDims& d, double elements, LayerOp producer, bool backward) {
    const double a = d.act_bytes;
    switch (d.fp8_recipe) {
        case Fp8Recipe::Delayed: return 0.0;
        case Fp8Recipe::Current: return (backward ? a + 2.0 : a + 1.0) * elements;
        case Fp8Recipe::Mxfp8: return producer == LayerOp::Act ? 0.0 : (a + 2.0 * (1.0 + kMxScaleBytes)) * elements;
    }
    return 0.0;
}

// MXFP8 writes the column-wise copy a weight gradient reads when it quantizes; the per-tensor
// recipes transpose the saved fp8 input before the weight gradient.
bool transposes_saved_input(const LayerDims& d) { return d.fp8_recipe != Fp8Recipe::Mxfp8; }
double elements(std::int64_t rows, std::int64_t cols) { return static_cast<double>(rows) * static_cast<double>(cols); }

const sim::GemmShape& forward_gemm(const LayerContext& c, LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return c.gemms.qkv;
        case LayerOp::Qk: return c.gemms.qk;
        case LayerOp::Av: return c.gemms.av;
        case LayerOp::Proj: return c.gemms.proj;
        case LayerOp::Fc1: return c.gemms.fc1;
        default: return c.gemms.fc2;
    }
}

bool is_gemm_op(LayerOp op) {
    return op == LayerOp::Qkv || op == LayerOp::Qk || op == LayerOp::Av || op == LayerOp::Proj ||
           op == LayerOp::Fc1 || op == LayerOp::Fc2;
}

// Whether the layer runs `op`: the fused kernel or the unfused core, dropout only when asked.
bool runs(const LayerDims& d, LayerOp op) {
    switch (op) {
        case LayerOp::Attn: return d.fused_attention;
        case LayerOp::Qk:
        case LayerOp::Softmax:
        case LayerOp::Av: return !d.fused_attention;
        case LayerOp::AttnDropout: return !d.fused_attention && d.attn_dropout;
        case LayerOp::Rope: return d.te_kernels && d.swiglu;  // rotary models; Megatron 2021 had none
        default: return true;
    }
}

// One forward kernel, in the forward or the recompute phase, allocating what it stores. Under
// context parallelism the attention core is the mode's kernels and collectives.
std::uint32_t forward_kernel(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp op) {
    if (op == LayerOp::Attn && c.dims.cp > 1) {
        const PerLayerOp& stored = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
        emit_context_attention_forward(e, c, ph, stored[idx(op)]);
        return e.last_compute();
    }
    const Labels& l = *c.labels;
    const std::uint32_t label = ph == Phase::Recompute ? l.rec[idx(op)] : l.fwd[idx(op)];
    sim::Op o = is_gemm_op(op)          ? gemm_op(label, forward_gemm(c, op), category(ph), c.dims.act_bytes)
                : op == LayerOp::Attn ? fused_attention_op(label, c.dims, false, category(ph))
                                      : memory_op(memory_kind(op), label, forward_bytes(c, op), category(ph));
    const PerLayerOp& alloc = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
    o.memory_alloc = Bytes(alloc[idx(op)]);
    return e.compute(o);
}

// The kernels from `first` to `last` in execution order (the fused kernel in place of QK..PV,
// the rotary embedding of Q and K after the QKV GEMM).
void forward_range(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp first, LayerOp last) {
    for (int i = static_cast<int>(first); i <= static_cast<int>(last); ++i) {
        const auto op = static_cast<LayerOp>(i);
        if (op == LayerOp::Qk && c.dims.fused_attention) forward_kernel(e, c, ph, LayerOp::Attn);
        if (runs(c.dims, op)) forward_kernel(e, c, ph, op);
        if (op == LayerOp::Qkv && runs(c.dims, LayerOp::Rope)) forward_kernel(e, c, ph, LayerOp::Rope);
    }
}

// Under TE fp8, the cast of the projection's input (the attention output, written in 16 bits by
// the attention core) before its GEMM; the other linear inputs come cast from LayerNorm or the
// activation.
void projection_input_cast(OpEmitter& e, const LayerContext& c, Phase ph) {
    if (!te_fp8(c.dims)) return;
    const sim::GemmShape& g = c.gemms.proj;
    const auto k = idx(LayerOp::Proj);
    const std::uint32_t label = ph == Phase::Recompute ? c.labels->cast_r[k] : c.labels->cast_f[k];
    e.compute(memory_op(OpKind::Elementwise, label, quantize_bytes(c.dims, elements(g.m, g.k)), category(ph)));
}

// Under TE fp8, the cast after a LayerNorm or the activation that does not quantize itself
// (producer_cast_bytes), for the linear layer `consumer`; returns the op that ends with the fp8
// input, `produced` when there is no cast.
std::uint32_t producer_cast(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp producer, LayerOp consumer,
                            double elements, std::uint32_t produced) {
    if (!te_fp8(c.dims)) return produced;
    const double bytes = producer_cast_bytes(c.dims, elements, producer, false);
    if (bytes == 0.0) return produced;
    const auto k = idx(consumer);
    const std::uint32_t label = ph == Phase::Recompute ? c.labels->cast_r[k] : c.labels->cast_f[k];
    return e.compute(memory_op(OpKind::Elementwise, label, bytes, category(ph)));
}

// One of the layer's overlap_chunks sub-batches (seed_algorithms §1.3): 1/k of the GEMM rows,
// kernel bytes and collective bytes, and 1/k of every stored activation, so the k sub-batches
// keep exactly what the whole micro-batch keeps (Merak frees nothing earlier: each sub-batch's
// tensors live until its own backward).
LayerContext sub_batch(const LayerContext& c) {
    if (c.overlap_chunks <= 1) return c;
    LayerContext sub = c;
    sub.dims = sub_batch_dims(c.dims, c.overlap_chunks);
    sub.gemms = layer_gemms(sub.dims);
    for (std::size_t i = 0; i < sub.memory.forward.size(); ++i) {
        sub.memory.forward[i] /= c.overlap_chunks;
        sub.memory.recompute[i] /= c.overlap_chunks;
    }
    sub.memory.recomputed_qkv /= c.overlap_chunks;
    sub.memory.recomputed_norm1 /= c.overlap_chunks;
    sub.memory.recomputed_norm2 /= c.overlap_chunks;
    sub.overlap_chunks = 1;
    return sub;
}

// Per sub-batch, the tensor-parallel reduction still in flight (kNoOp: none).
using Pending = std::vector<std::uint32_t>;

Pending no_pending(const LayerContext& c) {
    return Pending(static_cast<std::size_t>(std::max(1, c.overlap_chunks)), kNoOp);
}

// Tags the ops emitted next with the sub-batch whose slot of `pending` is `slot` (nullptr: the
// whole micro-batch again), so that executors running the math know which rows an op touches.
void tag_sub_batch(OpEmitter& e, const Pending& pending, const std::uint32_t* slot) {
    if (pending.size() <= 1) return;
    OpTag tag = e.context();
    tag.sub_chunk = slot == nullptr ? -1 : static_cast<std::int32_t>(slot - pending.data());
    e.set_context(tag);
}

// The next kernel of a sub-batch waits for its reduction, then bias-dropout-add finishes it.
void finish_reduction(OpEmitter& e, const LayerContext& sub, Phase ph, std::uint32_t& pending, LayerOp bda) {
    e.wait_for(pending);
    pending = kNoOp;
    forward_kernel(e, sub, ph, bda);
}

// One half of a layer (attention or MLP) for each sub-batch in turn: finish the sub-batch's
// previous half (`before`, its bias-dropout-add, after the reduction), then this half's LayerNorm,
// the sequence-parallel gather of the normalised input, the kernels up to the row-parallel GEMM
// `out`, and issue the tensor-parallel reduction of its output without waiting, so the next
// sub-batch computes while it is in flight (Merak's tp_overlapping_level 2). With one sub-batch
// this is Megatron's order: the reduction blocks the next kernel.
void half_layer_forward(OpEmitter& e, const LayerContext& sub, Phase ph, Pending& pending, const LayerOp* before,
                        LayerOp ln, LayerOp first, LayerOp last, LayerOp out) {
    const OpKind reduce = sub.dims.sp ? OpKind::ReduceScatter : OpKind::AllReduce;
    for (std::uint32_t& in_flight : pending) {
        tag_sub_batch(e, pending, &in_flight);
        if (before) finish_reduction(e, sub, ph, in_flight, *before);
        std::uint32_t normalised = forward_kernel(e, sub, ph, ln);
        if (sub.dims.mla && first == LayerOp::Qkv) {  // latent attention's projections in place of QKV
            emit_mla_projections_forward(e, sub, ph);
            if (runs(sub.dims, LayerOp::Rope)) forward_kernel(e, sub, ph, LayerOp::Rope);
            forward_range(e, sub, ph, LayerOp::Qk, last);
        } else {
        // Current scaling casts the LayerNorm output before the sequence-parallel gather (fp8 is
        // gathered); MXFP8 gathers the 16-bit output and casts the whole of it after.
        const double input = elements(forward_gemm(sub, first).m, forward_gemm(sub, first).k);
        if (sub.dims.fp8_recipe == Fp8Recipe::Current)
            normalised = producer_cast(e, sub, ph, ln, first, input / sub.dims.sp_div(), normalised);
        if (sub.dims.sp) e.wait_for(emit_tp_collective(e, sub, ph, OpKind::AllGather, normalised));
        if (sub.dims.fp8_recipe == Fp8Recipe::Mxfp8) producer_cast(e, sub, ph, ln, first, input, normalised);
        forward_range(e, sub, ph, first, last);
        }
        if (out == LayerOp::Fc2) {
            const sim::GemmShape& g = forward_gemm(sub, out);
            producer_cast(e, sub, ph, LayerOp::Act, out, elements(g.m, g.k), kNoOp);
        }
        if (out == LayerOp::Proj) projection_input_cast(e, sub, ph);
        const std::uint32_t produced = forward_kernel(e, sub, ph, out);
        in_flight = emit_tp_collective(e, sub, ph, reduce, produced);
    }
    tag_sub_batch(e, pending, nullptr);
}

// Ordinary or recomputed forward of the whole layer. Only the last sub-batch's MLP reduction is
// exposed (Merak's level 3, which also hides it behind the next layer, is not modelled).
void layer_forward(OpEmitter& e, const LayerContext& c, Phase ph) {
    const LayerContext sub = sub_batch(c);
    Pending pending = no_pending(c);
    half_layer_forward(e, sub, ph, pending, nullptr, LayerOp::Ln1, LayerOp::Qkv, LayerOp::Av, LayerOp::Proj);
    if (c.dims.moe) {  // one sub-batch (validate_plan): the experts' MLP in place of the dense one
        finish_reduction(e, sub, ph, pending.front(), LayerOp::Bda1);
        forward_kernel(e, sub, ph, LayerOp::Ln2);
        emit_moe_forward(e, sub, ph);
        forward_kernel(e, sub, ph, LayerOp::Bda2);
        return;
    }
    const LayerOp bda1 = LayerOp::Bda1;
    half_layer_forward(e, sub, ph, pending, &bda1, LayerOp::Ln2, LayerOp::Fc1, LayerOp::Act, LayerOp::Fc2);
    for (std::uint32_t& in_flight : pending) {
        tag_sub_batch(e, pending, &in_flight);
        finish_reduction(e, sub, ph, in_flight, LayerOp::Bda2);
    }
    tag_sub_batch(e, pending, nullptr);
}

double freed(const LayerContext& c, LayerOp op) {
    return c.memory.forward[idx(op)] + c.memory.recompute[idx(op)];
}

// Backward of a memory-bound kernel; releases what its forward stored.
void backward_memory(OpEmitter& e, const LayerContext& c, LayerOp op) {
    sim::Op o = memory_op(memory_kind(op), c.labels->bwd[idx(op)], 2.0 * forward_bytes(c, op), OpCategory::Compute);
    o.memory_free = Bytes(freed(c, op));
    e.compute(o);
}

// The weight-gradient GEMM of `op` (which releases the saved input), after, under TE fp8, the
// transpose of its saved fp8 input (the projection's input was cast with its transpose in the
// forward).
std::uint32_t weight_grad_gemm(OpEmitter& e, const LayerContext& c, LayerOp op) {
    const sim::GemmShape& g = forward_gemm(c, op);
    const Labels& l = *c.labels;
    if (te_fp8(c.dims) && is_linear(op) && op != LayerOp::Proj && transposes_saved_input(c.dims))
        e.compute(memory_op(OpKind::Elementwise, l.transpose_b[idx(op)], 2.0 * elements(g.m, g.k), OpCategory::Compute));
    sim::Op w = gemm_op(l.wgrad[idx(op)], weight_grad_shape(g), OpCategory::Compute, c.dims.act_bytes);
    w.memory_free = Bytes(freed(c, op));
    return e.compute(w);
}

constexpr OpKind kNoReduce = OpKind::Send;  // marker: this GEMM's input gradient needs no collective

// Backward of a GEMM: input gradient, then weight gradient (which releases the saved input).
// `gather` (sequence parallelism) must arrive before the weight gradient, `reduce` is the
// input-gradient collective issued after the input-gradient GEMM; it overlaps the weight GEMM
// when the plan says so (Megatron's asynchronous all-reduce), else it runs after the weight GEMM
// and blocks the next kernel (the caller waits for it).
std::uint32_t backward_gemm(OpEmitter& e, const LayerContext& c, LayerOp op, std::uint32_t gather,
                            OpKind reduce_kind) {
    const sim::GemmShape& g = forward_gemm(c, op);
    const Labels& l = *c.labels;
    const bool cast = te_fp8(c.dims) && is_linear(op);
    // The output gradient in fp8 with its transpose (FC1's comes so from the activation backward,
    // cast after it under current scaling).
    const double gradient = elements(g.m, g.n);
    const double cast_bytes = op != LayerOp::Fc1 ? quantize_bytes(c.dims, gradient)
                                                 : producer_cast_bytes(c.dims, gradient, LayerOp::Act, true);
    if (cast && cast_bytes > 0.0)
        e.compute(memory_op(OpKind::Elementwise, l.cast_b[idx(op)], cast_bytes, OpCategory::Compute));
    const std::uint32_t dgrad =
        e.compute(gemm_op(l.bwd[idx(op)], input_grad_shape(g), OpCategory::Compute, c.dims.act_bytes));
    const bool deferred = c.defer_weight_grad && is_linear(op);
    const bool overlap = c.tp_backward_overlap || deferred;  // deferred: nothing to wait for
    const std::uint32_t reduce = reduce_kind == kNoReduce || !overlap
                                     ? kNoOp
                                     : emit_tp_collective(e, c, Phase::Backward, reduce_kind, dgrad);
    if (deferred) return reduce;
    e.wait_for(gather);
    const std::uint32_t wgrad = weight_grad_gemm(e, c, op);
    if (reduce_kind == kNoReduce || overlap) return reduce;
    return emit_tp_collective(e, c, Phase::Backward, reduce_kind, wgrad);
}

void selective_recompute(OpEmitter& e, const LayerContext& c) {
    forward_range(e, c, Phase::Recompute, LayerOp::Qk, LayerOp::Av);
}

// The fused kernel's backward: dQ, dK, dV in one kernel; releases what its forward kept.
void fused_attention_backward(OpEmitter& e, const LayerContext& c) {
    if (c.dims.cp > 1) return emit_context_attention_backward(e, c, freed(c, LayerOp::Attn));
    sim::Op o = fused_attention_op(c.labels->bwd[idx(LayerOp::Attn)], c.dims, true, OpCategory::Compute);
    o.memory_free = Bytes(freed(c, LayerOp::Attn) + c.memory.recomputed_qkv);
    e.compute(o);
}

// Sequence parallelism: all-gather after the last kernel (the output gradient, or a LayerNorm
// output for a weight gradient); kNoOp without it.
std::uint32_t gather_after_last(OpEmitter& e, const LayerContext& c) {
    return c.dims.sp ? emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, e.last_compute()) : kNoOp;
}

// Megatron-Core's mlp module (a dense MLP with its norm fused into FC1; activation_memory.cpp):
// the checkpointed MLP's forward again, the fused norm, the sequence-parallel gather, FC1, the
// activation, FC2 and its reduction, allocating what the backward reads; the reduction is waited
// for, as the checkpoint's forward returns after it.
void recompute_mlp(OpEmitter& e, const LayerContext& c) {
    Pending pending(1, kNoOp);
    half_layer_forward(e, c, Phase::Recompute, pending, nullptr, LayerOp::Ln2, LayerOp::Fc1, LayerOp::Act, LayerOp::Fc2);
    e.wait_for(pending.front());
}

bool recomputes_mlp(const LayerContext& c) {
    return c.recompute == Recompute::Selective && c.dims.mlp_checkpointed();
}

// The MLP block's backward of one sub-batch; returns FC1's input-gradient reduction (in flight).
std::uint32_t mlp_backward(OpEmitter& e, const LayerContext& c, OpKind reduce) {
    backward_memory(e, c, LayerOp::Bda2);
    e.wait_for(gather_after_last(e, c));  // sequence parallel: gather the output gradient
    emit_norm_recompute(e, c, LayerOp::Ln2, c.memory.recomputed_norm2);
    if (recomputes_mlp(c)) recompute_mlp(e, c);
    backward_gemm(e, c, LayerOp::Fc2, kNoOp, kNoReduce);
    backward_memory(e, c, LayerOp::Act);
    // LayerNorm-2 output for FC1's weight gradient (with the weight gradient, when deferred)
    const std::uint32_t regather = c.defer_weight_grad ? kNoOp : gather_after_last(e, c);
    return backward_gemm(e, c, LayerOp::Fc1, regather, reduce);
}

// The attention block's backward of one sub-batch; returns QKV's input-gradient reduction.
std::uint32_t attention_backward(OpEmitter& e, const LayerContext& c, OpKind reduce) {
    backward_memory(e, c, LayerOp::Bda1);
    e.wait_for(gather_after_last(e, c));
    emit_norm_recompute(e, c, LayerOp::Ln1, c.memory.recomputed_norm1);
    backward_gemm(e, c, LayerOp::Proj, kNoOp, kNoReduce);
    if (c.recompute == Recompute::Selective && c.dims.mla && c.dims.recompute_mla_up) {
        emit_mla_up_projections_recompute(e, c);
        if (runs(c.dims, LayerOp::Rope)) forward_kernel(e, c, Phase::Recompute, LayerOp::Rope);
    }
    if (c.recompute == Recompute::Selective && c.dims.recompute_core_attention) selective_recompute(e, c);
    if (c.dims.fused_attention) {
        fused_attention_backward(e, c);
    } else {
        backward_gemm(e, c, LayerOp::Av, kNoOp, kNoReduce);
        if (c.dims.attn_dropout) backward_memory(e, c, LayerOp::AttnDropout);
        backward_memory(e, c, LayerOp::Softmax);
        backward_gemm(e, c, LayerOp::Qk, kNoOp, kNoReduce);
    }
    const std::uint32_t regather = c.defer_weight_grad || c.dims.mla ? kNoOp : gather_after_last(e, c);
    if (runs(c.dims, LayerOp::Rope))  // the rotation of dQ and dK: the forward's bytes
        e.compute(memory_op(OpKind::Elementwise, c.labels->bwd[idx(LayerOp::Rope)], forward_bytes(c, LayerOp::Rope),
                            OpCategory::Compute));
    if (c.dims.mla) {  // latent attention reduces its latents' gradient itself
        emit_mla_projections_backward(e, c);
        return kNoOp;
    }
    return backward_gemm(e, c, LayerOp::Qkv, regather, reduce);
}

// The deferred weight gradients of one sub-batch, in the backward's order; under sequence
// parallelism each LayerNorm output is re-gathered right before the GEMM that reads it.
void weight_grad_pass(OpEmitter& e, const LayerContext& c) {
    if (c.dims.moe) {
        emit_moe_weight_grad(e, c);
    } else {
        weight_grad_gemm(e, c, LayerOp::Fc2);
        e.wait_for(gather_after_last(e, c));  // LayerNorm-2 output, after FC2's weight gradient
        weight_grad_gemm(e, c, LayerOp::Fc1);
    }
    weight_grad_gemm(e, c, LayerOp::Proj);
    if (c.dims.mla) return emit_mla_weight_grads(e, c);
    e.wait_for(gather_after_last(e, c));  // LayerNorm-1 output, after the projection's
    weight_grad_gemm(e, c, LayerOp::Qkv);
}

}  // namespace

sim::Op fused_attention_op(std::uint32_t label, const LayerDims& d, bool backward, sim::OpCategory cat) {
    sim::Op o;
    o.kind = backward ? OpKind::FusedAttentionBackward : OpKind::FusedAttention;
    o.category = cat;
    o.label = label;
    o.shape = sim::PackedGemmShape::of(layer_gemms(d).qk);  // {queries, keys, head_dim, b*heads/t}
    o.flops = Flops(fused_attention_flops(d, backward));
    return o;
}

sim::OpKind memory_kind(LayerOp op) {
    switch (op) {
        case LayerOp::Ln1:
        case LayerOp::Ln2: return sim::OpKind::LayerNorm;
        case LayerOp::Softmax: return sim::OpKind::Softmax;
        case LayerOp::AttnDropout: return sim::OpKind::Dropout;
        case LayerOp::Act: return sim::OpKind::Activation;
        default: return sim::OpKind::Elementwise;
    }
}

void emit_norm_recompute(OpEmitter& e, const LayerContext& c, LayerOp norm, double output) {
    if (!(output > 0.0)) return;
    sim::Op o = memory_op(memory_kind(norm), c.labels->rec[idx(norm)], forward_bytes(c, norm), OpCategory::Recompute);
    o.memory_alloc = Bytes(output);
    e.compute(o);
}

LayerContext LayerContext::make(const LayerDims& d, Recompute r, const Labels& labels) {
    LayerContext c;
    c.dims = d;
    c.gemms = layer_gemms(d);
    c.memory = layer_memory(d, r);
    c.recompute = r;
    c.labels = &labels;
    return c;
}

LayerContext LayerContext::with_policy(Recompute r) const {
    LayerContext c = *this;
    c.memory = layer_memory(dims, r);
    c.recompute = r;
    return c;
}

std::uint32_t emit_tp_collective(OpEmitter& e, const LayerContext& c, Phase phase, OpKind kind,
                                 std::uint32_t after) {
    return emit_tp_collective_of(e, c, phase, kind, c.dims.act_bytes * c.bsh(), after);
}

std::uint32_t emit_tp_collective_of(OpEmitter& e, const LayerContext& c, Phase phase, OpKind kind, double bytes,
                                    std::uint32_t after) {
    if (!c.tp()) return kNoOp;
    const std::size_t k = kind == OpKind::AllReduce ? 0 : (kind == OpKind::AllGather ? 1 : 2);
    // Collectives of recomputation are tensor-parallel communication too: the breakdown splits
    // compute from recompute only for compute ops.
    const auto cat = comm_class::kTensor;
    const sim::Op o = comm_op(kind, c.labels->tp[static_cast<std::size_t>(phase)][k], bytes, stream::kTensorComm,
                              0, cat);
    return e.comm(o, after);
}

// 2d, 3d and atp run their own layer programs (strategies/tensor_modes/mode_layer.hpp).
void emit_layer_forward(OpEmitter& e, const LayerContext& c) {
    if (c.dims.mesh.own_program()) return emit_mode_layer_forward(e, c);
    layer_forward(e, c, Phase::Forward);
}

void emit_layer_recompute(OpEmitter& e, const LayerContext& c) {
    if (c.dims.mesh.own_program()) return emit_mode_layer_recompute(e, c);
    layer_forward(e, c, Phase::Recompute);
}

void emit_layer_backward(OpEmitter& e, const LayerContext& c) {
    if (c.dims.mesh.own_program()) return emit_mode_layer_backward(e, c);
    const OpKind reduce = c.tp() ? (c.dims.sp ? OpKind::ReduceScatter : OpKind::AllReduce) : kNoReduce;
    if (c.recompute == Recompute::Full) layer_forward(e, c, Phase::Recompute);
    // Sub-batches in reverse order, as Merak's backward runs them; each input-gradient reduction
    // (QKV, FC1) is in flight while the next sub-batch computes, and the LayerNorm backward of
    // its own sub-batch waits for it.
    const LayerContext sub = sub_batch(c);
    Pending pending = no_pending(c);
    for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
        tag_sub_batch(e, pending, &*it);
        if (sub.dims.moe) {
            backward_memory(e, sub, LayerOp::Bda2);
            *it = emit_moe_backward(e, sub);
            continue;
        }
        *it = mlp_backward(e, sub, reduce);
    }
    for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
        tag_sub_batch(e, pending, &*it);
        e.wait_for(*it);
        backward_memory(e, sub, LayerOp::Ln2);
        *it = attention_backward(e, sub, reduce);
    }
    for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
        tag_sub_batch(e, pending, &*it);
        e.wait_for(*it);
        backward_memory(e, sub, LayerOp::Ln1);
    }
    tag_sub_batch(e, pending, nullptr);
}

void emit_layer_weight_grad(OpEmitter& e, const LayerContext& c) {
    const LayerContext sub = sub_batch(c);
    const Pending slots = no_pending(c);  // only names the sub-batches
    for (auto it = slots.rbegin(); it != slots.rend(); ++it) {  // in the backward's order
        tag_sub_batch(e, slots, &*it);
        weight_grad_pass(e, sub);
    }
    tag_sub_batch(e, slots, nullptr);
}

}  // namespace cuboid
