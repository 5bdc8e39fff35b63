// The layer skeleton shared by 2d, 3d and atp. Per half-layer (attention or MLP):
//   forward   LayerNorm (+ all-reduce of the per-row sum and sum of squares over the axis that
//             splits the hidden size), first linear, interior (attention core or activation),
//             second linear, bias-dropout-add; all on the device's share.
//   backward  the reverse; the second linear's input gradient, its weight gradient, the
//             interior's backward, the first linear's input and weight gradients, the LayerNorm
//             backward with its statistic all-reduce (ColossalAI's LayerNorm2D / LayerNorm3D,
//             seed_algorithms §2.1).
// ATP's chunk-based overlap (Cheng et al. 2023, seed_algorithms §3.4), c = overlap_chunks: the
// linears and the interior run in c chunks of the rows; chunk k's collective is in flight while
// chunk k+1 computes: first linears of all chunks, then per chunk (after its reduction) the
// interior and second linear, then per chunk (after its all-reduce) bias-dropout-add; in the
// backward the same with the input-gradient reductions, the weight gradients (whole rows)
// overlapping them. Under ATP's token split (mode_shapes.hpp) the interior of chunk k works on the
// device's 1/dr of the chunk's rows and is all-gathered before the next linear; that linear of
// chunk k is issued after the interior of chunk k+1, so the gather is in flight meanwhile. The
// LayerNorm (and its tiny statistic all-reduce) is not chunked. 2d and 3d run one chunk.
// Each chunk's ops carry its index as the tag's sub_chunk (the whole micro-batch's: -1), so that
// executors running the math know which rows an op touches; the backward visits the chunks in
// reverse (its k-th chunk is chunk c-1-k: all chunks have the same shapes, so only the tags say
// it), because a chunk cut along the sequence sends key and value gradients to the earlier ones. The bias and LayerNorm parameter gradients, partial over a device's rows under 2d
// and 3d, are all-reduced once per iteration by the stage (tensor_modes/partial_grads.hpp).
#include "strategies/tensor_modes/mode_layer.hpp"

#include <algorithm>
#include <vector>

#include "strategies/tensor_modes/mode_linear.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t idx(LayerOp op) { return static_cast<std::size_t>(op); }
double freed(const LayerContext& c, LayerOp op) { return c.memory.forward[idx(op)] + c.memory.recompute[idx(op)]; }

int chunks_of(const LayerContext& c) {
    return c.dims.mesh.mode == TensorMode::Atp ? std::max(1, c.overlap_chunks) : 1;
}

// The attention core of one chunk: whole sequences when the chunks divide them, else s/c query
// rows of every sequence attending to all s keys (the FLOPs of the chunks sum to the whole).
struct Chunk {
    double sequences = 0.0;
    std::int64_t queries = 0;
    double fraction = 1.0;
};

Chunk chunk_of(const LayerContext& c, int chunks) {
    const double seqs = mode_shares(c.dims).sequences;
    const auto whole = static_cast<std::int64_t>(seqs);
    if (chunks == 1 || (whole == seqs && whole % chunks == 0)) return {seqs / chunks, c.dims.s, 1.0 / chunks};
    return {seqs, c.dims.s / chunks, 1.0 / chunks};
}

// HBM bytes of a memory-bound forward kernel on the device's share (as layer_ops.cpp for 1d).
double kernel_bytes(const LayerContext& c, LayerOp op) {
    const LayerDims& d = c.dims;
    const ModeShares s = mode_shares(d);
    const double a = d.act_bytes;
    const double scores = s.sequences * static_cast<double>(d.heads) / s.head_div * static_cast<double>(d.s * d.s);
    const double ffn = s.mlp_tokens * static_cast<double>(d.ffn) / s.head_div;
    switch (op) {
        case LayerOp::Ln1:
        case LayerOp::Ln2: return 2.0 * a * s.residual;
        case LayerOp::Softmax: return 2.0 * a * scores;
        case LayerOp::AttnDropout: return (2.0 * a + 1.0) * scores;
        case LayerOp::Bda1:
        case LayerOp::Bda2: return (3.0 * a + (d.hidden_dropout ? 1.0 : 0.0)) * s.residual;
        default: return (d.swiglu ? 3.0 : 2.0) * a * ffn;  // Act
    }
}

std::uint32_t forward_kernel(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp op, double fraction) {
    const Labels& l = *c.labels;
    const std::uint32_t label = ph == Phase::Recompute ? l.rec[idx(op)] : l.fwd[idx(op)];
    sim::Op o = memory_op(memory_kind(op), label, kernel_bytes(c, op) * fraction, category(ph));
    const PerLayerOp& alloc = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
    o.memory_alloc = Bytes(alloc[idx(op)] * fraction);
    return e.compute(o);
}

void backward_kernel(OpEmitter& e, const LayerContext& c, LayerOp op, double fraction) {
    sim::Op o = memory_op(memory_kind(op), c.labels->bwd[idx(op)], 2.0 * kernel_bytes(c, op) * fraction, OpCategory::Compute);
    o.memory_free = Bytes(freed(c, op) * fraction);
    e.compute(o);
}

// LayerNorm statistics: two fp32 values per row (forward: sum and sum of squares; backward: the
// two reductions of the gradient), all-reduced over the axis that splits the hidden size.
void norm_statistics(OpEmitter& e, const LayerContext& c, Phase ph, std::uint32_t after) {
    const ModeShares s = mode_shares(c.dims);
    constexpr double kStatBytes = 2.0 * 4.0;
    e.wait_for(mesh_collective(e, c, ph, OpKind::AllReduce, s.norm_axis, kStatBytes * s.norm_rows, after));
}

std::uint32_t attention_gemm(OpEmitter& e, const LayerContext& c, Phase ph, LayerOp op, const Chunk& k) {
    const Labels& l = *c.labels;
    const sim::GemmShape g = op == LayerOp::Qk ? mode_qk_gemm(c.dims, k.sequences, k.queries)
                                               : mode_av_gemm(c.dims, k.sequences, k.queries);
    sim::Op o = gemm_op(ph == Phase::Recompute ? l.rec[idx(op)] : l.fwd[idx(op)], g, category(ph), c.dims.act_bytes);
    const PerLayerOp& alloc = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
    o.memory_alloc = Bytes(alloc[idx(op)] * k.fraction);
    return e.compute(o);
}

void attention_gemm_backward(OpEmitter& e, const LayerContext& c, LayerOp op, const Chunk& k) {
    const Labels& l = *c.labels;
    const sim::GemmShape g = op == LayerOp::Qk ? mode_qk_gemm(c.dims, k.sequences, k.queries)
                                               : mode_av_gemm(c.dims, k.sequences, k.queries);
    e.compute(gemm_op(l.bwd[idx(op)], input_grad_shape(g), OpCategory::Compute, c.dims.act_bytes));
    sim::Op w = gemm_op(l.wgrad[idx(op)], weight_grad_shape(g), OpCategory::Compute, c.dims.act_bytes);
    w.memory_free = Bytes(freed(c, op) * k.fraction);
    e.compute(w);
}

void interior_forward(OpEmitter& e, const LayerContext& c, Phase ph, bool attention, const Chunk& k) {
    if (!attention) {
        forward_kernel(e, c, ph, LayerOp::Act, k.fraction);
        return;
    }
    attention_gemm(e, c, ph, LayerOp::Qk, k);
    forward_kernel(e, c, ph, LayerOp::Softmax, k.fraction);
    forward_kernel(e, c, ph, LayerOp::AttnDropout, k.fraction);
    attention_gemm(e, c, ph, LayerOp::Av, k);
}

void interior_backward(OpEmitter& e, const LayerContext& c, bool attention, const Chunk& k) {
    if (!attention) {
        backward_kernel(e, c, LayerOp::Act, k.fraction);
        return;
    }
    if (c.recompute == Recompute::Selective) interior_forward(e, c, Phase::Recompute, true, k);
    attention_gemm_backward(e, c, LayerOp::Av, k);
    backward_kernel(e, c, LayerOp::AttnDropout, k.fraction);
    backward_kernel(e, c, LayerOp::Softmax, k.fraction);
    attention_gemm_backward(e, c, LayerOp::Qk, k);
}

struct Half {
    LayerOp ln, first, second, bda;
    bool attention;
};
constexpr Half kAttention{LayerOp::Ln1, LayerOp::Qkv, LayerOp::Proj, LayerOp::Bda1, true};
constexpr Half kMlp{LayerOp::Ln2, LayerOp::Fc1, LayerOp::Fc2, LayerOp::Bda2, false};

// Tags the ops emitted next with the chunk (the forward's i-th, or the backward's i-th: chunk
// c-1-i); chunk -1: the whole micro-batch. One chunk: no tag (the layer is not split).
class ChunkTags {
public:
    ChunkTags(OpEmitter& e, int chunks, bool reverse) : e_(e), chunks_(chunks), reverse_(reverse) {}
    ~ChunkTags() { whole(); }
    ChunkTags(const ChunkTags&) = delete;
    ChunkTags& operator=(const ChunkTags&) = delete;
    void at(int i) { set(reverse_ ? chunks_ - 1 - i : i); }
    void whole() { set(-1); }

private:
    void set(int chunk) {
        if (chunks_ <= 1) return;
        OpTag tag = e_.context();
        tag.sub_chunk = chunk;
        e_.set_context(tag);
    }
    OpEmitter& e_;
    int chunks_;
    bool reverse_;
};

// Runs chunk i's interior, then the linear that follows it: at once, or, when the interior's
// output must first be gathered (ATP's token split), after the next chunk's interior.
template <typename Interior, typename Next>
void interiors(OpEmitter& e, ChunkTags& tags, int chunks, const std::vector<std::uint32_t>& ready, Interior interior,
               Next next) {
    int pending = -1;
    std::uint32_t pending_gather = kNoOp;
    for (int i = 0; i < chunks; ++i) {
        e.wait_for(ready[static_cast<std::size_t>(i)]);
        tags.at(i);
        const std::uint32_t gathered = interior();
        if (pending >= 0) {
            e.wait_for(pending_gather);
            tags.at(pending);
            next(pending);
            pending = -1;
        }
        if (gathered == kNoOp) {
            next(i);
        } else {
            pending = i;
            pending_gather = gathered;
        }
    }
    if (pending >= 0) {
        e.wait_for(pending_gather);
        tags.at(pending);
        next(pending);
    }
    tags.whole();
}

void half_forward(OpEmitter& e, const LayerContext& c, Phase ph, const Half& h) {
    const int chunks = chunks_of(c);
    const Chunk k = chunk_of(c, chunks);
    norm_statistics(e, c, ph, forward_kernel(e, c, ph, h.ln, 1.0));
    const ModeLinear first = mode_linear(c.dims, h.first), second = mode_linear(c.dims, h.second);
    ChunkTags tags(e, chunks, false);
    std::vector<std::uint32_t> ready(static_cast<std::size_t>(chunks));
    for (int i = 0; i < chunks; ++i) {
        tags.at(i);
        ready[static_cast<std::size_t>(i)] = mode_linear_forward(e, c, ph, first, i, chunks);
    }
    std::vector<std::uint32_t> reduced(static_cast<std::size_t>(chunks));
    interiors(
        e, tags, chunks, ready,
        [&] {
            interior_forward(e, c, ph, h.attention, k);
            return mode_interior_gather(e, c, ph, second, chunks);
        },
        [&](int i) { reduced[static_cast<std::size_t>(i)] = mode_linear_forward(e, c, ph, second, i, chunks); });
    for (int i = 0; i < chunks; ++i) {
        e.wait_for(reduced[static_cast<std::size_t>(i)]);
        tags.at(i);
        forward_kernel(e, c, ph, h.bda, k.fraction);
    }
}

void half_backward(OpEmitter& e, const LayerContext& c, const Half& h) {
    const int chunks = chunks_of(c);
    const Chunk k = chunk_of(c, chunks);
    const ModeLinear first = mode_linear(c.dims, h.first), second = mode_linear(c.dims, h.second);
    backward_kernel(e, c, h.bda, 1.0);
    ChunkTags tags(e, chunks, true);
    std::vector<std::uint32_t> ready(static_cast<std::size_t>(chunks));
    for (int i = 0; i < chunks; ++i) {
        tags.at(i);
        ready[static_cast<std::size_t>(i)] = mode_linear_dgrad(e, c, second, chunks);
    }
    tags.whole();
    const std::uint32_t second_weights = mode_linear_wgrad(e, c, second);
    std::vector<std::uint32_t> reduced(static_cast<std::size_t>(chunks));
    interiors(
        e, tags, chunks, ready,
        [&] {
            interior_backward(e, c, h.attention, k);
            return mode_interior_gather(e, c, Phase::Backward, first, chunks);
        },
        [&](int i) { reduced[static_cast<std::size_t>(i)] = mode_linear_dgrad(e, c, first, chunks); });
    const std::uint32_t first_weights = mode_linear_wgrad(e, c, first);
    for (const std::uint32_t r : reduced) e.wait_for(r);
    e.wait_for(second_weights);  // long done: issued before the interior's backward
    sim::Op ln = memory_op(OpKind::LayerNorm, c.labels->bwd[idx(h.ln)], 2.0 * kernel_bytes(c, h.ln), OpCategory::Compute);
    ln.memory_free = Bytes(freed(c, h.ln));
    norm_statistics(e, c, Phase::Backward, e.compute(ln));
    // The first linear's weight-gradient reduction is waited by the next kernel, whatever it is.
    e.wait_for(first_weights);
}

void layer_forward(OpEmitter& e, const LayerContext& c, Phase ph) {
    half_forward(e, c, ph, kAttention);
    half_forward(e, c, ph, kMlp);
}

}  // namespace

void emit_mode_layer_forward(OpEmitter& e, const LayerContext& c) { layer_forward(e, c, Phase::Forward); }

void emit_mode_layer_recompute(OpEmitter& e, const LayerContext& c) { layer_forward(e, c, Phase::Recompute); }

void emit_mode_layer_backward(OpEmitter& e, const LayerContext& c) {
    if (c.recompute == Recompute::Full) layer_forward(e, c, Phase::Recompute);
    half_backward(e, c, kMlp);
    half_backward(e, c, kAttention);
}

}  // namespace cuboid
