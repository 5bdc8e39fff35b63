#include "strategies/moe_layer.hpp"

#include "strategies/group_slots.hpp"
#include "strategies/program_streams.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t idx(MoeOp op) { return static_cast<std::size_t>(op); }
double as_double(std::int64_t v) { return static_cast<double>(v); }

// Megatron-Core's moe module: the layer's MLP checkpointed from its input, its forward run again
// at the start of its backward (activation_memory.cpp).
bool checkpointed(const LayerContext& c) { return c.recompute == Recompute::Selective && c.dims.moe_checkpointed(); }

// Megatron-Core's shared_experts module: the shared experts' MLP checkpointed (SharedExpertMLP under
// tensor_parallel.checkpoint), its forward run again right before its backward. Inside the moe
// module's checkpoint too, the checkpoints nest: the moe module's recomputation keeps nothing of
// the shared experts either, and they run a third time before their backward.
bool shared_checkpointed(const LayerContext& c) {
    return c.recompute == Recompute::Selective && c.dims.shared_checkpointed();
}

// Whether the layer's stored tensors are allocated in phase `ph`: by the forward, or under full
// recomputation (whose forward keeps only the layer input, activation_memory.hpp) and the moe
// module by the recomputation. LayerNorm 2's output (FC1's entry) tells which the policy chose.
bool stores_in(const LayerContext& c, Phase ph) {
    const auto fc1 = static_cast<std::size_t>(LayerOp::Fc1);
    const bool recomputed = (c.memory.forward[fc1] == 0.0 && c.memory.recompute[fc1] > 0.0) || checkpointed(c);
    return (ph == Phase::Recompute) == recomputed;
}

double stored(const LayerContext& c, Phase ph, double bytes) { return stores_in(c, ph) ? bytes : 0.0; }

// The router's input (LayerNorm 2's output, the dense MLP's FC1 entry) with its probabilities:
// all that the router's weight gradient frees.
double router_saved(const LayerContext& c) {
    const auto fc1 = static_cast<std::size_t>(LayerOp::Fc1);
    return c.memory.forward[fc1] + c.memory.recompute[fc1];
}

// What the router's forward (or its recomputation, under full recomputation or the moe module)
// allocates of it: its phase's part, without the norm's output that the layernorm module
// recomputes (LayerMemory::recomputed_norm2, allocated by that recomputation).
double router_kept(const LayerContext& c, Phase ph) {
    const auto fc1 = static_cast<std::size_t>(LayerOp::Fc1);
    return ph == Phase::Recompute ? c.memory.recompute[fc1] - c.memory.recomputed_norm2 : c.memory.forward[fc1];
}

// Megatron-Core's moe_act module: the experts' activation output (expert FC2's input) is freed
// once FC2 has read it and written again from the kept FC1 output before FC2's backward (under
// the moe module too: its recomputation keeps what the forward would, but that).
bool discards_activation(const LayerContext& c) {
    return c.recompute == Recompute::Selective && c.dims.recompute_moe_act;
}

sim::Op compute_op(const LayerContext& c, Phase ph, MoeOp op, const sim::GemmShape& g) {
    return gemm_op(c.labels->moe[static_cast<std::size_t>(ph)][idx(op)], g, category(ph), c.dims.act_bytes);
}

sim::Op kernel_op(const LayerContext& c, Phase ph, MoeOp op, sim::OpKind kind, double bytes) {
    return memory_op(kind, c.labels->moe[static_cast<std::size_t>(ph)][idx(op)], bytes, category(ph));
}

// A collective of the expert layer on the tensor-communication stream, after `after`: expert
// communication in the breakdown.
std::uint32_t expert_collective(OpEmitter& e, OpKind kind, std::uint32_t label, double bytes, std::uint16_t slot,
                                std::uint32_t after, double frees = 0.0) {
    sim::Op o = comm_op(kind, label, bytes, stream::kTensorComm, slot, comm_class::kExpert);
    o.memory_free = Bytes(frees);
    return e.comm(o, after);
}

// Bytes of the memory-bound kernels: the router's top-k softmax reads the fp32 logits and writes
// the probabilities; a permutation reads and writes every token copy; the activation reads its
// input (gate and up under SwiGLU) and writes its output.
double topk_bytes(const LayerDims& d) { return 2.0 * router_probability_bytes(d); }
double permute_bytes(const LayerDims& d) { return 2.0 * moe_dispatch_bytes(d); }
double act_bytes(const LayerDims& d, double rows, double ffn) { return (d.swiglu ? 3.0 : 2.0) * d.act_bytes * rows * ffn; }

// Tokens on their way to the experts: the all-to-all, then the expert-tensor gather (the
// forward's dispatch, the backward's combine of the output gradient). The next compute op waits
// for the last one. `frees`: the send buffer, released by the all-to-all.
void to_experts(OpEmitter& e, const LayerContext& c, Phase ph, std::uint32_t all_to_all_label, double frees) {
    const LayerDims& d = c.dims;
    const double bytes = moe_dispatch_bytes(d);
    std::uint32_t last = e.last_compute();
    if (d.ep > 1) last = expert_collective(e, OpKind::AllToAll, all_to_all_label, bytes, slot::kExpert, last, frees);
    if (d.etp > 1)
        last = expert_collective(e, OpKind::AllGather, c.labels->moe_etp_gather[static_cast<std::size_t>(ph)],
                                 bytes * as_double(d.etp), slot::kExpertTensor, last);
    if (last != e.last_compute()) e.wait_for(last);
}

// Tokens on their way back from the experts: the expert-tensor reduce-scatter, then the
// all-to-all (the forward's combine, the backward's dispatch of the input gradients).
void from_experts(OpEmitter& e, const LayerContext& c, Phase ph, std::uint32_t all_to_all_label, double frees) {
    const LayerDims& d = c.dims;
    const double bytes = moe_dispatch_bytes(d);
    std::uint32_t last = e.last_compute();
    if (d.etp > 1)
        last = expert_collective(e, OpKind::ReduceScatter, c.labels->moe_etp_scatter[static_cast<std::size_t>(ph)],
                                 bytes * as_double(d.etp), slot::kExpertTensor, last, d.ep > 1 ? 0.0 : frees);
    if (d.ep > 1) last = expert_collective(e, OpKind::AllToAll, all_to_all_label, bytes, slot::kExpert, last, frees);
    if (last != e.last_compute()) e.wait_for(last);
}

// The dispatch (forward: to the experts; backward: the input gradients back) and the combine
// (forward: back from the experts; backward: the output gradient to them).
void dispatch(OpEmitter& e, const LayerContext& c, Phase ph, double frees) {
    const std::uint32_t label = c.labels->moe_dispatch[static_cast<std::size_t>(ph)];
    ph == Phase::Backward ? from_experts(e, c, ph, label, frees) : to_experts(e, c, ph, label, frees);
}

void combine(OpEmitter& e, const LayerContext& c, Phase ph, double frees) {
    const std::uint32_t label = c.labels->moe_combine[static_cast<std::size_t>(ph)];
    ph == Phase::Backward ? to_experts(e, c, ph, label, frees) : from_experts(e, c, ph, label, frees);
}

// The shared experts' forward: sequence parallelism gathers the tokens, FC1 and FC2 split over
// the tensor group, the output reduce-scattered (all-reduced without sequence parallelism), the
// next kernel waiting for it. `keeps`: FC1 and the activation allocate their outputs for the
// backward (else the shared_experts module's later run does).
void shared_forward(OpEmitter& e, const LayerContext& c, Phase ph, const MoeGemms& g, const MoeActivations& keep,
                    bool keeps) {
    const LayerDims& d = c.dims;
    if (d.sp) e.wait_for(emit_tp_collective(e, c, ph, OpKind::AllGather, e.last_compute()));
    sim::Op fc1 = compute_op(c, ph, MoeOp::SharedFc1, g.shared_fc1);
    fc1.memory_alloc = Bytes(keeps ? keep.shared_fc1 : 0.0);
    e.compute(fc1);
    const double inner = as_double(d.shared_ffn) / as_double(d.t);
    sim::Op act = kernel_op(c, ph, MoeOp::SharedAct, OpKind::Activation, act_bytes(d, as_double(d.tokens()), inner));
    act.memory_alloc = Bytes(keeps ? keep.shared_act : 0.0);
    e.compute(act);
    const std::uint32_t out = e.compute(compute_op(c, ph, MoeOp::SharedFc2, g.shared_fc2));
    e.wait_for(emit_tp_collective(e, c, ph, d.sp ? OpKind::ReduceScatter : OpKind::AllReduce, out));
}

// One weight-gradient GEMM of the expert layer, releasing `frees` bytes: the input it read, when
// nothing after it reads that input (the shared FC2's activation output, the experts' dispatched
// copies, the router's saved input; the experts' activation output only under a split backward,
// else the activation's backward releases it with FC1's output).
void weight_grad(OpEmitter& e, const LayerContext& c, MoeOp op, const sim::GemmShape& g, double frees) {
    sim::Op w = gemm_op(c.labels->moe_wgrad[idx(op)], weight_grad_shape(g), OpCategory::Compute, c.dims.act_bytes);
    w.memory_free = Bytes(frees);
    e.compute(w);
}

// The shared FC1's weight gradient reads LayerNorm 2's output, under sequence parallelism gathered
// again.
void shared_fc1_weight_grad(OpEmitter& e, const LayerContext& c, const MoeGemms& g) {
    if (c.dims.sp) e.wait_for(emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, e.last_compute()));
    weight_grad(e, c, MoeOp::SharedFc1, g.shared_fc1, 0.0);
}

// What runs again before the layer's backward kernels: the layernorm module's recomputation of
// the router's norm, then the moe module's checkpointed forward, whose input that norm's output is
// (Megatron-Core recomputes both as the backward reaches the MLP's output). Under sequence
// parallelism with shared experts both follow the output gradient's gather (shared_backward), as
// the mlp module's recomputation does in a dense layer.
void recompute_before_backward(OpEmitter& e, const LayerContext& c) {
    emit_norm_recompute(e, c, LayerOp::Ln2, c.memory.recomputed_norm2);
    if (checkpointed(c)) emit_moe_forward(e, c, Phase::Recompute);
}

// The shared experts' backward; returns FC1's input-gradient reduction, in flight.
std::uint32_t shared_backward(OpEmitter& e, const LayerContext& c, const MoeGemms& g, const MoeActivations& keep) {
    const LayerDims& d = c.dims;
    const auto b = static_cast<std::size_t>(Phase::Backward);
    if (d.sp) {
        e.wait_for(emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, e.last_compute()));
        recompute_before_backward(e, c);  // after the gradient's gather
    }
    if (shared_checkpointed(c)) shared_forward(e, c, Phase::Recompute, g, keep, true);
    e.compute(gemm_op(c.labels->moe[b][idx(MoeOp::SharedFc2)], input_grad_shape(g.shared_fc2), OpCategory::Compute,
                      d.act_bytes));
    if (!c.defer_weight_grad) weight_grad(e, c, MoeOp::SharedFc2, g.shared_fc2, keep.shared_act);
    const double inner = as_double(d.shared_ffn) / as_double(d.t);
    sim::Op act = memory_op(OpKind::Activation, c.labels->moe[b][idx(MoeOp::SharedAct)],
                            2.0 * act_bytes(d, as_double(d.tokens()), inner), OpCategory::Compute);
    act.memory_free = Bytes(keep.shared_fc1);
    e.compute(act);
    const std::uint32_t dgrad = e.compute(gemm_op(c.labels->moe[b][idx(MoeOp::SharedFc1)], input_grad_shape(g.shared_fc1),
                                                  OpCategory::Compute, d.act_bytes));
    const std::uint32_t reduce =
        emit_tp_collective(e, c, Phase::Backward, d.sp ? OpKind::ReduceScatter : OpKind::AllReduce, dgrad);
    const bool overlap = c.tp_backward_overlap || c.defer_weight_grad;  // deferred: nothing to wait for
    if (!overlap) e.wait_for(reduce);
    if (!c.defer_weight_grad) shared_fc1_weight_grad(e, c, g);
    return overlap ? reduce : kNoOp;
}

}  // namespace

MoeActivations moe_activations(const LayerDims& d) {
    const double a = d.act_bytes, rows = as_double(d.expert_rows()), h = as_double(d.h);
    MoeActivations m;
    m.dispatched = a * rows * h;
    m.expert_inner = a * rows * as_double(d.expert_fc1_width() + d.expert_ffn / d.etp);
    m.expert_act = a * rows * as_double(d.expert_ffn / d.etp);
    m.shared_fc1 = a * as_double(d.tokens()) * as_double(d.shared_fc1_width()) / as_double(d.t);
    m.shared_act = a * as_double(d.tokens()) * as_double(d.shared_ffn) / as_double(d.t);
    return m;
}

double router_probability_bytes(const LayerDims& d) { return 4.0 * as_double(d.routed_tokens()) * as_double(d.experts); }

double moe_dispatch_bytes(const LayerDims& d) {
    return d.act_bytes * as_double(d.routed_tokens() * d.top_k) * as_double(d.h) * d.imbalance;
}

void emit_moe_forward(OpEmitter& e, const LayerContext& c, Phase ph) {
    const LayerDims& d = c.dims;
    const MoeGemms g = moe_gemms(d);
    const MoeActivations keep = moe_activations(d);
    sim::Op router = compute_op(c, ph, MoeOp::Router, g.router);
    router.memory_alloc = Bytes(router_kept(c, ph));
    e.compute(router);
    e.compute(kernel_op(c, ph, MoeOp::RouterTopk, OpKind::Softmax, topk_bytes(d)));
    // The permuted copies wait in the send buffer until the dispatch has sent them.
    const double send_buffer = d.ep > 1 ? moe_dispatch_bytes(d) : 0.0;
    sim::Op permute = kernel_op(c, ph, MoeOp::Permute, OpKind::Elementwise, permute_bytes(d));
    permute.memory_alloc = Bytes(send_buffer);
    e.compute(permute);
    dispatch(e, c, ph, send_buffer);
    sim::Op fc1 = compute_op(c, ph, MoeOp::ExpertFc1, g.expert_fc1);
    fc1.memory_alloc = Bytes(stored(c, ph, keep.dispatched));
    e.compute(fc1);
    const double rows = as_double(d.expert_rows());
    sim::Op act = kernel_op(c, ph, MoeOp::ExpertAct, OpKind::Activation,
                            act_bytes(d, rows, as_double(d.expert_ffn) / as_double(d.etp)));
    act.memory_alloc = Bytes(stored(c, ph, keep.expert_inner));
    e.compute(act);
    // The experts' output lives until the combine has sent it back (the un-permutation when no
    // collective runs).
    const double output = d.act_bytes * rows * as_double(d.h);
    sim::Op fc2 = compute_op(c, ph, MoeOp::ExpertFc2, g.expert_fc2);
    fc2.memory_alloc = Bytes(output);
    if (stores_in(c, ph) && discards_activation(c)) fc2.memory_free = Bytes(keep.expert_act);
    e.compute(fc2);
    const bool collective = d.ep > 1 || d.etp > 1;
    combine(e, c, ph, collective ? output : 0.0);
    sim::Op unpermute = kernel_op(c, ph, MoeOp::Unpermute, OpKind::Elementwise, permute_bytes(d));
    unpermute.memory_free = Bytes(collective ? 0.0 : output);
    e.compute(unpermute);
    if (d.shared_ffn > 0) shared_forward(e, c, ph, g, keep, stores_in(c, ph) && !shared_checkpointed(c));
}

std::uint32_t emit_moe_backward(OpEmitter& e, const LayerContext& c) {
    const LayerDims& d = c.dims;
    const MoeGemms g = moe_gemms(d);
    const MoeActivations keep = moe_activations(d);
    const Labels& l = *c.labels;
    const auto b = static_cast<std::size_t>(Phase::Backward);
    const bool now = !c.defer_weight_grad;
    // The recomputations first (after the shared experts' gather of the output gradient under
    // sequence parallelism, shared_backward).
    const bool shared_gathers = d.shared_ffn > 0 && d.sp;
    if (!shared_gathers) recompute_before_backward(e, c);
    const std::uint32_t shared = d.shared_ffn > 0 ? shared_backward(e, c, g, keep) : kNoOp;
    e.compute(kernel_op(c, Phase::Backward, MoeOp::Unpermute, OpKind::Elementwise, permute_bytes(d)));
    combine(e, c, Phase::Backward, 0.0);
    const double rows = as_double(d.expert_rows());
    if (discards_activation(c)) {  // before FC2's backward, whose weight gradient reads it
        sim::Op act = kernel_op(c, Phase::Recompute, MoeOp::ExpertAct, OpKind::Activation,
                                act_bytes(d, rows, as_double(d.expert_ffn) / as_double(d.etp)));
        act.memory_alloc = Bytes(keep.expert_act);
        e.compute(act);
    }
    e.compute(gemm_op(l.moe[b][idx(MoeOp::ExpertFc2)], input_grad_shape(g.expert_fc2), OpCategory::Compute, d.act_bytes));
    if (now) weight_grad(e, c, MoeOp::ExpertFc2, g.expert_fc2, 0.0);
    sim::Op act = kernel_op(c, Phase::Backward, MoeOp::ExpertAct, OpKind::Activation,
                            2.0 * act_bytes(d, rows, as_double(d.expert_ffn) / as_double(d.etp)));
    // Deferred, FC2's weight gradient still reads the activation's output.
    act.memory_free = Bytes(now ? keep.expert_inner : keep.expert_inner - keep.expert_act);
    e.compute(act);
    e.compute(gemm_op(l.moe[b][idx(MoeOp::ExpertFc1)], input_grad_shape(g.expert_fc1), OpCategory::Compute, d.act_bytes));
    if (now) weight_grad(e, c, MoeOp::ExpertFc1, g.expert_fc1, keep.dispatched);
    dispatch(e, c, Phase::Backward, 0.0);
    e.compute(kernel_op(c, Phase::Backward, MoeOp::Permute, OpKind::Elementwise, permute_bytes(d)));
    e.compute(kernel_op(c, Phase::Backward, MoeOp::RouterTopk, OpKind::Softmax, topk_bytes(d)));
    e.compute(gemm_op(l.moe[b][idx(MoeOp::Router)], input_grad_shape(g.router), OpCategory::Compute, d.act_bytes));
    if (now) weight_grad(e, c, MoeOp::Router, g.router, router_saved(c));
    return shared;
}

void emit_moe_weight_grad(OpEmitter& e, const LayerContext& c) {
    const MoeGemms g = moe_gemms(c.dims);
    const MoeActivations keep = moe_activations(c.dims);
    if (c.dims.shared_ffn > 0) {
        weight_grad(e, c, MoeOp::SharedFc2, g.shared_fc2, keep.shared_act);
        shared_fc1_weight_grad(e, c, g);
    }
    weight_grad(e, c, MoeOp::ExpertFc2, g.expert_fc2, keep.expert_act);
    weight_grad(e, c, MoeOp::ExpertFc1, g.expert_fc1, keep.dispatched);
    weight_grad(e, c, MoeOp::Router, g.router, router_saved(c));
}

}  // namespace cuboid
