#include "strategies/layer_ops.hpp"

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
    const double scores = static_cast<double>(d.b * d.heads) * static_cast<double>(d.s * d.s) / static_cast<double>(d.t);
    const double ffn = static_cast<double>(d.tokens() * d.ffn) / static_cast<double>(d.t);
    switch (op) {
        case LayerOp::Ln1:
        case LayerOp::Ln2: return 2.0 * a * region;
        case LayerOp::Softmax: return 2.0 * a * scores;
        case LayerOp::AttnDropout: return (2.0 * a + 1.0) * scores;       // in, out, mask
        case LayerOp::Bda1:
        case LayerOp::Bda2: return (3.0 * a + 1.0) * region;             // x, residual, out, mask
        case LayerOp::Act: return (d.swiglu ? 3.0 : 2.0) * a * ffn;      // gate+up in, out
        default: return 0.0;
    }
}

sim::OpKind memory_kind(LayerOp op) {
    switch (op) {
        case LayerOp::Ln1:
        case LayerOp::Ln2: return OpKind::LayerNorm;
        case LayerOp::Softmax: return OpKind::Softmax;
        case LayerOp::AttnDropout: return OpKind::Dropout;
        case LayerOp::Act: return OpKind::Activation;
        default: return OpKind::Elementwise;
    }
}

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

// One forward kernel, in the forward or the recompute phase, allocating what it stores.
std::uint32_t forward_kernel(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp op) {
    const Labels& l = *c.labels;
    const std::uint32_t label = ph == Phase::Recompute ? l.rec[idx(op)] : l.fwd[idx(op)];
    sim::Op o = is_gemm_op(op) ? gemm_op(label, forward_gemm(c, op), category(ph), c.dims.act_bytes)
                               : memory_op(memory_kind(op), label, forward_bytes(c, op), category(ph));
    const PerLayerOp& alloc = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
    o.memory_alloc = Bytes(alloc[idx(op)]);
    return e.compute(o);
}

void forward_range(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp first, LayerOp last) {
    for (int i = static_cast<int>(first); i <= static_cast<int>(last); ++i)
        forward_kernel(e, c, ph, static_cast<LayerOp>(i));
}

// One half of a layer (attention or MLP): its LayerNorm, the sequence-parallel gather of the
// normalised input, the kernels up to the row-parallel GEMM `out`, the tensor-parallel reduction
// of its output, then bias-dropout-add.
void half_layer_forward(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp ln, LayerOp first, LayerOp last,
                        LayerOp out, LayerOp bda) {
    const OpKind reduce = c.dims.sp ? OpKind::ReduceScatter : OpKind::AllReduce;
    const std::uint32_t normalised = forward_kernel(e, c, ph, ln);
    if (c.dims.sp) e.wait_for(emit_tp_collective(e, c, ph, OpKind::AllGather, normalised));
    forward_range(e, c, ph, first, last);
    const std::uint32_t produced = forward_kernel(e, c, ph, out);
    e.wait_for(emit_tp_collective(e, c, ph, reduce, produced));
    forward_kernel(e, c, ph, bda);
}

// Ordinary or recomputed forward of the whole layer.
void layer_forward(OpEmitter& e, const LayerContext& c, Phase ph) {
    half_layer_forward(e, c, ph, LayerOp::Ln1, LayerOp::Qkv, LayerOp::Av, LayerOp::Proj, LayerOp::Bda1);
    half_layer_forward(e, c, ph, LayerOp::Ln2, LayerOp::Fc1, LayerOp::Act, LayerOp::Fc2, LayerOp::Bda2);
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
    const std::uint32_t dgrad =
        e.compute(gemm_op(l.bwd[idx(op)], input_grad_shape(g), OpCategory::Compute, c.dims.act_bytes));
    const bool overlap = c.tp_backward_overlap;
    const std::uint32_t reduce = reduce_kind == kNoReduce || !overlap
                                     ? kNoOp
                                     : emit_tp_collective(e, c, Phase::Backward, reduce_kind, dgrad);
    e.wait_for(gather);
    sim::Op w = gemm_op(l.wgrad[idx(op)], weight_grad_shape(g), OpCategory::Compute, c.dims.act_bytes);
    w.memory_free = Bytes(freed(c, op));
    const std::uint32_t wgrad = e.compute(w);
    if (reduce_kind == kNoReduce || overlap) return reduce;
    return emit_tp_collective(e, c, Phase::Backward, reduce_kind, wgrad);
}

void selective_recompute(OpEmitter& e, const LayerContext& c) {
    forward_range(e, c, Phase::Recompute, LayerOp::Qk, LayerOp::Av);
}

}  // namespace

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

void emit_layer_forward(OpEmitter& e, const LayerContext& c) { layer_forward(e, c, Phase::Forward); }

void emit_layer_recompute(OpEmitter& e, const LayerContext& c) { layer_forward(e, c, Phase::Recompute); }

void emit_layer_backward(OpEmitter& e, const LayerContext& c) {
    const bool sp = c.dims.sp;
    const OpKind reduce = c.tp() ? (sp ? OpKind::ReduceScatter : OpKind::AllReduce) : kNoReduce;
    const auto gather_after_last = [&] {
        return sp ? emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, e.last_compute()) : kNoOp;
    };
    if (c.recompute == Recompute::Full) layer_forward(e, c, Phase::Recompute);
    // MLP block.
    backward_memory(e, c, LayerOp::Bda2);
    e.wait_for(gather_after_last());  // sequence parallel: gather the output gradient
    backward_gemm(e, c, LayerOp::Fc2, kNoOp, kNoReduce);
    backward_memory(e, c, LayerOp::Act);
    std::uint32_t regather = gather_after_last();  // LayerNorm-2 output for FC1's weight gradient
    e.wait_for(backward_gemm(e, c, LayerOp::Fc1, regather, reduce));
    backward_memory(e, c, LayerOp::Ln2);
    // Attention block.
    backward_memory(e, c, LayerOp::Bda1);
    e.wait_for(gather_after_last());
    backward_gemm(e, c, LayerOp::Proj, kNoOp, kNoReduce);
    if (c.recompute == Recompute::Selective) selective_recompute(e, c);
    backward_gemm(e, c, LayerOp::Av, kNoOp, kNoReduce);
    backward_memory(e, c, LayerOp::AttnDropout);
    backward_memory(e, c, LayerOp::Softmax);
    backward_gemm(e, c, LayerOp::Qk, kNoOp, kNoReduce);
    regather = gather_after_last();
    e.wait_for(backward_gemm(e, c, LayerOp::Qkv, regather, reduce));
    backward_memory(e, c, LayerOp::Ln1);
}

}  // namespace cuboid
