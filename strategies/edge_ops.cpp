#include "strategies/edge_ops.hpp"

#include "strategies/group_slots.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/tensor_modes/mode_linear.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

constexpr double kMask = 1.0;          // dropout mask bytes per element
constexpr double kFp32 = 4.0;          // cross-entropy works on fp32 logits
constexpr int kXentReductions = 3;     // max, target logit, sum of exponentials

double region(const LayerContext& c) { return c.bsh() / c.dims.sp_div(); }
double logits_elems(const LayerContext& c) {
    return static_cast<double>(c.dims.tokens() * c.dims.vocab_per_rank());
}
// Word rows gathered + positions (GPT) read, embedding written.
double embed_bytes(const LayerContext& c) { return (c.dims.swiglu ? 2.0 : 3.0) * c.dims.act_bytes * c.bsh(); }
// Megatron's embedding dropout has the hidden dropout's rate; at 0 PyTorch's dropout returns its
// input (no pass, no mask), so only the op's launch is left.
double embed_mask_bytes(const LayerContext& c) { return c.dims.hidden_dropout ? kMask * region(c) : 0.0; }
double embed_dropout_bytes(const LayerContext& c) {
    return c.dims.hidden_dropout ? 2.0 * c.dims.act_bytes * region(c) + embed_mask_bytes(c) : 0.0;
}

bool mode(const LayerContext& c, TensorMode m) { return c.dims.mesh.own_program() && c.dims.mesh.mode == m; }

// 2d and 3d keep the final LayerNorm's input as a [rows, h/q] block (mode_shapes.hpp): like the
// layers' LayerNorms, its two per-row statistics (forward: sum and sum of squares; backward: the
// two row sums of the gradient) are all-reduced over the axis that splits the hidden size.
void final_norm_statistics(OpEmitter& e, const LayerContext& c, Phase ph, std::uint32_t after) {
    if (!mode(c, TensorMode::TwoD) && !mode(c, TensorMode::ThreeD)) return;
    const ModeShares s = mode_shares(c.dims);
    constexpr double kStatBytes = 2.0 * 4.0;  // two fp32 values per row
    e.wait_for(mesh_collective(e, c, ph, OpKind::AllReduce, s.norm_axis, kStatBytes * s.norm_rows, after));
}

// ATP's residual stream is the hidden block [M, h/dr] (mode_shapes.hpp) while the embedding and
// the head work on the whole [M, h]: all-gather over the hidden axis (the last layer's output
// before the final LayerNorm, the first layer's input gradient before the embedding backward).
void atp_hidden_gather(OpEmitter& e, const LayerContext& c, Phase ph) {
    if (!mode(c, TensorMode::Atp)) return;
    const double full = c.dims.act_bytes * c.bsh();  // the gathered [M, h] (planner convention)
    e.wait_for(mesh_collective(e, c, ph, OpKind::AllGather, c.dims.mesh.hidden_axis(), full, e.last_compute()));
}

}  // namespace

void emit_embedding_forward(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    const std::uint32_t embed = e.compute(memory_op(OpKind::Embedding, l.embed_f, embed_bytes(c), OpCategory::Compute));
    const OpKind reduce = c.dims.sp ? OpKind::ReduceScatter : OpKind::AllReduce;
    e.wait_for(emit_tp_collective(e, c, Phase::Forward, reduce, embed));
    sim::Op drop = memory_op(OpKind::Dropout, l.embed_dropout_f, embed_dropout_bytes(c), OpCategory::Compute);
    drop.memory_alloc = Bytes(embed_mask_bytes(c));
    e.compute(drop);
}

void emit_embedding_backward(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    atp_hidden_gather(e, c, Phase::Backward);
    sim::Op drop = memory_op(OpKind::Dropout, l.embed_dropout_b, 2.0 * embed_dropout_bytes(c), OpCategory::Compute);
    drop.memory_free = Bytes(embed_mask_bytes(c));
    const std::uint32_t d = e.compute(drop);
    if (c.dims.sp) e.wait_for(emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, d));
    e.compute(memory_op(OpKind::Embedding, l.embed_b, embed_bytes(c), OpCategory::Compute));
}

void emit_head_forward(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    const double a = c.dims.act_bytes;
    atp_hidden_gather(e, c, Phase::Forward);
    sim::Op ln = memory_op(OpKind::LayerNorm, l.final_ln_f, 2.0 * a * region(c), OpCategory::Compute);
    ln.memory_alloc = Bytes(a * region(c));
    const std::uint32_t ln_i = e.compute(ln);
    final_norm_statistics(e, c, Phase::Forward, ln_i);
    if (c.dims.sp) e.wait_for(emit_tp_collective(e, c, Phase::Forward, OpKind::AllGather, ln_i));
    sim::Op logits = gemm_op(l.logits_f, logits_gemm(c.dims), OpCategory::Compute, a);
    logits.memory_alloc = Bytes(a * region(c));
    std::uint32_t last = e.compute_16bit(logits);
    // Read 16-bit logits, write and re-read the fp32 exponentials; keep the fp32 softmax.
    sim::Op xent = memory_op(OpKind::CrossEntropy, l.xent_f, (a + 2.0 * kFp32) * logits_elems(c), OpCategory::Compute);
    xent.memory_alloc = Bytes(kFp32 * logits_elems(c));
    if (!c.tp()) {
        e.compute(xent);
        return;
    }
    const double scalars = kFp32 * static_cast<double>(c.dims.tokens());
    const sim::Op reduce = comm_op(OpKind::AllReduce, l.xent_tp, scalars, stream::kTensorComm, 0,
                                   comm_class::kTensor);
    e.wait_for(e.comm(reduce, last));  // the max over the vocabulary shards
    last = e.compute(xent);
    for (int i = 1; i < kXentReductions; ++i) last = e.comm(reduce, last);
    e.wait_for(last);
}

void emit_head_backward(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    const double a = c.dims.act_bytes;
    sim::Op xent = memory_op(OpKind::CrossEntropy, l.xent_b, (kFp32 + a) * logits_elems(c), OpCategory::Compute);
    xent.memory_free = Bytes(kFp32 * logits_elems(c));
    const std::uint32_t x = e.compute(xent);
    // Sequence parallelism: the logits layer kept only its shard of the final LayerNorm output;
    // like Megatron's linear, the backward gathers it again for the weight gradient, the gather
    // overlapping the input-gradient GEMM.
    const std::uint32_t regather = c.dims.sp ? emit_tp_collective(e, c, Phase::Backward, OpKind::AllGather, x) : kNoOp;
    const sim::GemmShape g = logits_gemm(c.dims);
    const std::uint32_t dgrad = e.compute_16bit(gemm_op(l.logits_dgrad, input_grad_shape(g), OpCategory::Compute, a));
    const OpKind reduce = c.dims.sp ? OpKind::ReduceScatter : OpKind::AllReduce;
    // Like the layers' GEMMs: the input-gradient reduction overlaps the weight-gradient GEMM only
    // with the asynchronous all-reduce (tp_backward_overlap), else it follows it and blocks.
    std::uint32_t red = c.tp_backward_overlap ? emit_tp_collective(e, c, Phase::Backward, reduce, dgrad) : dgrad;
    sim::Op wgrad = gemm_op(l.logits_wgrad, weight_grad_shape(g), OpCategory::Compute, a);
    wgrad.memory_free = Bytes(a * region(c));
    e.wait_for(regather);
    const std::uint32_t w = e.compute_16bit(wgrad);
    if (!c.tp_backward_overlap) red = emit_tp_collective(e, c, Phase::Backward, reduce, w);
    e.wait_for(red);
    sim::Op ln = memory_op(OpKind::LayerNorm, l.final_ln_b, 4.0 * a * region(c), OpCategory::Compute);
    ln.memory_free = Bytes(a * region(c));
    final_norm_statistics(e, c, Phase::Backward, e.compute(ln));
}

namespace {
// The module's [b*s, 2h] x [2h, h] projection and what its forward keeps: the two norms' inputs
// and the projection's input, each b*s x h per half.
sim::GemmShape mtp_projection(const LayerContext& c) { return {c.dims.tokens(), c.dims.h, 2 * c.dims.h, 1}; }
double mtp_kept_bytes(const LayerContext& c) { return 4.0 * c.dims.act_bytes * c.bsh(); }
}  // namespace

void emit_mtp_input_forward(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    const double a = c.dims.act_bytes;
    e.compute(memory_op(OpKind::Embedding, l.mtp_embed_f, 2.0 * a * c.bsh(), OpCategory::Compute));
    sim::Op norms = memory_op(OpKind::LayerNorm, l.mtp_norm_f, 2.0 * 2.0 * a * c.bsh(), OpCategory::Compute);
    norms.memory_alloc = Bytes(mtp_kept_bytes(c));
    e.compute(norms);
    e.compute(gemm_op(l.mtp_proj_f, mtp_projection(c), OpCategory::Compute, a));
}

void emit_mtp_input_backward(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    const double a = c.dims.act_bytes;
    const sim::GemmShape g = mtp_projection(c);
    e.compute(gemm_op(l.mtp_proj_dgrad, input_grad_shape(g), OpCategory::Compute, a));
    e.compute(gemm_op(l.mtp_proj_wgrad, weight_grad_shape(g), OpCategory::Compute, a));
    sim::Op norms = memory_op(OpKind::LayerNorm, l.mtp_norm_b, 2.0 * 4.0 * a * c.bsh(), OpCategory::Compute);
    norms.memory_free = Bytes(mtp_kept_bytes(c));
    e.compute(norms);
    e.compute(memory_op(OpKind::Embedding, l.mtp_embed_b, 2.0 * a * c.bsh(), OpCategory::Compute));
}

std::uint32_t emit_tied_embedding_grad_sync(OpEmitter& e, const Labels& labels, double bytes,
                                            const std::vector<std::uint32_t>& after) {
    std::vector<std::uint32_t> deps;
    for (std::uint32_t op : after)
        if (op != kNoOp) deps.push_back(op);
    return e.comm(comm_op(OpKind::AllReduce, labels.emb_grad_sync, bytes, stream::kDataComm, slot::kEmbedding,
                          comm_class::kData),
                  deps);
}

}  // namespace cuboid
