#include "strategies/layer_ops.hpp"

#include <algorithm>
#include <vector>

#include "strategies/tensor_modes/mode_layer.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t idx(LayerOp op) { return static_cast<std::size_t>(op); }

sim::OpCategory category(Phase ph) {
    return ph == Phase::Recompute ? OpCategory::Recompute : OpCategory::Compute;
}

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
        case LayerOp::Bda2: return (3.0 * a + 1.0) * region;             // x, residual, out, mask
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
// Bytes of a cast with transpose of `elements` 16-bit values: read once, written twice in fp8.
double cast_transpose_bytes(const LayerDims& d, double elements) { return (d.act_bytes + 2.0) * elements; }
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

// One forward kernel, in the forward or the recompute phase, allocating what it stores.
std::uint32_t forward_kernel(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp op) {
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
    e.compute(memory_op(OpKind::Elementwise, label, cast_transpose_bytes(c.dims, elements(g.m, g.k)), category(ph)));
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
        const std::uint32_t normalised = forward_kernel(e, sub, ph, ln);
        if (sub.dims.sp) e.wait_for(emit_tp_collective(e, sub, ph, OpKind::AllGather, normalised));
        forward_range(e, sub, ph, first, last);
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
    // The output gradient in fp8 with its transpose (FC1's comes so from the activation backward).
    if (cast && op != LayerOp::Fc1)
        e.compute(memory_op(OpKind::Elementwise, l.cast_b[idx(op)], cast_transpose_bytes(c.dims, elements(g.m, g.n)),
                            OpCategory::Compute));
    const std::uint32_t dgrad =
        e.compute(gemm_op(l.bwd[idx(op)], input_grad_shape(g), OpCategory::Compute, c.dims.act_bytes));
    const bool overlap = c.tp_backward_overlap;
    const std::uint32_t reduce = reduce_kind == kNoReduce || !overlap
                                     ? kNoOp
                                     : emit_tp_collective(e, c, Phase::Backward, reduce_kind, dgrad);
    e.wait_for(gather);
    // The saved fp8 input transposed for the weight gradient (the projection's input was cast
    // with its transpose in the forward).
    if (cast && op != LayerOp::Proj)
        e.compute(memory_op(OpKind::Elementwise, l.transpose_b[idx(op)], 2.0 * elements(g.m, g.k), OpCategory::Compute));
    sim::Op w = gemm_op(l.wgrad[idx(op)], weight_grad_shape(g), OpCategory::Compute, c.dims.act_bytes);
    w.memory_free = Bytes(freed(c, op));
    const std::uint32_t wgrad = e.compute(w);
    if (reduce_kind == kNoReduce || overlap) return reduce;
    return emit_tp_collective(e, c, Phase::Backward, reduce_kind, wgrad);
}

void selective_recompute(OpEmitter& e, const LayerContext& c) {
    forward_range(e, c, Phase::Recompute, LayerOp::Qk, LayerOp::Av);
}

// The fused kernel's backward: dQ, dK, dV in one kernel; releases what its forward kept.
void fused_attention_backward(OpEmitter& e, const LayerContext& c) {
    sim::Op o = fused_attention_op(c.labels->bwd[idx(LayerOp::Attn)], c.dims, true, OpCategory::Compute);
    o.memory_free = Bytes(freed(c, LayerOp::Attn));
    e.compute(o);
}

// Sequence parallelism: all-gather after the last kernel (the output gradient, or a LayerNorm
// output for a weight gradient); kNoOp without it.
std::uint32_t gather_after_last(OpEmitter& e, const LayerContext& c) {
    return c.dims.sp ? emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, e.last_compute()) : kNoOp;
}

// The MLP block's backward of one sub-batch; returns FC1's input-gradient reduction (in flight).
std::uint32_t mlp_backward(OpEmitter& e, const LayerContext& c, OpKind reduce) {
    backward_memory(e, c, LayerOp::Bda2);
    e.wait_for(gather_after_last(e, c));  // sequence parallel: gather the output gradient
    backward_gemm(e, c, LayerOp::Fc2, kNoOp, kNoReduce);
    backward_memory(e, c, LayerOp::Act);
    const std::uint32_t regather = gather_after_last(e, c);  // LayerNorm-2 output for FC1's weight gradient
    return backward_gemm(e, c, LayerOp::Fc1, regather, reduce);
}

// The attention block's backward of one sub-batch; returns QKV's input-gradient reduction.
std::uint32_t attention_backward(OpEmitter& e, const LayerContext& c, OpKind reduce) {
    backward_memory(e, c, LayerOp::Bda1);
    e.wait_for(gather_after_last(e, c));
    backward_gemm(e, c, LayerOp::Proj, kNoOp, kNoReduce);
    if (c.recompute == Recompute::Selective) selective_recompute(e, c);
    if (c.dims.fused_attention) {
        fused_attention_backward(e, c);
    } else {
        backward_gemm(e, c, LayerOp::Av, kNoOp, kNoReduce);
        if (c.dims.attn_dropout) backward_memory(e, c, LayerOp::AttnDropout);
        backward_memory(e, c, LayerOp::Softmax);
        backward_gemm(e, c, LayerOp::Qk, kNoOp, kNoReduce);
    }
    const std::uint32_t regather = gather_after_last(e, c);
    if (runs(c.dims, LayerOp::Rope))  // the rotation of dQ and dK: the forward's bytes
        e.compute(memory_op(OpKind::Elementwise, c.labels->bwd[idx(LayerOp::Rope)], forward_bytes(c, LayerOp::Rope),
                            OpCategory::Compute));
    return backward_gemm(e, c, LayerOp::Qkv, regather, reduce);
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
    if (!c.tp()) return kNoOp;
    const std::size_t k = kind == OpKind::AllReduce ? 0 : (kind == OpKind::AllGather ? 1 : 2);
    // Collectives of recomputation are tensor-parallel communication too: the breakdown splits
    // compute from recompute only for compute ops.
    const auto cat = OpCategory::TensorComm;
    const sim::Op o = comm_op(kind, c.labels->tp[static_cast<std::size_t>(phase)][k], c.dims.act_bytes * c.bsh(),
                              sim::stream::kTensorComm, 0, cat);
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

}  // namespace cuboid
