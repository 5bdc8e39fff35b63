// The ends of the model on one tensor rank: the vocabulary-parallel embedding (each rank looks
// up the rows of its vocabulary shard, the tensor reduction sums them), and the final LayerNorm,
// the column-parallel logits and Megatron's vocabulary-parallel cross-entropy (global max,
// target logit and sum of exponentials by three all-reduces of per-token scalars).
#include <cmath>
#include <stdexcept>

#include "strategies/group_slots.hpp"
#include "validate/cpu/blockwise_attention.hpp"
#include "validate/cpu/kernels.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

// Sequence of the global batch and position that row `r` of micro-batch `micro` of replica `dp`
// holds: the batch is split into d/c contiguous parts (one per data-parallel index, dp / c), each
// into micro-batches of b sequences, whose rows are in the order micro_batch_rows gives over the
// rank's s/c positions of each sequence (context parallelism: chunks cp and 2c-1-cp).
struct Token {
    std::size_t sequence = 0, position = 0;
};

Token token_at(const RunContext& ctx, int dp, int micro, Eigen::Index r) {
    const Layout& l = *ctx.layout;
    const int per_replica = static_cast<int>(ctx.batch->tokens.size()) / l.data_parallel();
    const int within = ctx.token_order.at(static_cast<std::size_t>(r)), local = ctx.dims.seq / l.context;
    const int position = l.context == 1 ? within % local
                                        : context_positions(ctx.dims.seq, l.context, l.context_of(dp))
                                              .at(static_cast<std::size_t>(within % local));
    return {static_cast<std::size_t>((dp / l.context) * per_replica + micro * ctx.micro_batch + within / local),
            static_cast<std::size_t>(position)};
}

int token_id(const RunContext& ctx, int dp, int micro, Eigen::Index r) {
    const Token k = token_at(ctx, dp, micro, r);
    return ctx.batch->tokens[k.sequence][k.position];
}

int target_id(const RunContext& ctx, int dp, int micro, Eigen::Index r) {
    const Token k = token_at(ctx, dp, micro, r);
    return ctx.batch->targets[k.sequence][k.position];
}

double total_tokens(const RunContext& ctx) {
    return static_cast<double>(ctx.batch->tokens.size()) * ctx.dims.seq;
}

}  // namespace

void RankRunner::embedding(Phase phase, const OpTag& tag) {
    const Key key{tag.micro, kEmbeddingBlock, 0};
    Cache& c = cache(key);
    const GptDims& d = ctx_.dims;
    const int rows = ctx_.micro_batch * local_seq(), shard = d.vocab / t(), lo = tp() * shard;
    if (phase == Phase::Forward) {
        Mat x = Mat::Zero(rows, d.hidden);
        for (int r = 0; r < rows; ++r) {
            const int token = token_id(ctx_, dp_, tag.micro, r);
            if (token >= lo && token < lo + shard) x.row(r) = out_.weights.wemb.row(token - lo);
            // positions counted once in the sum
            if (tp() == 0) x.row(r) += out_.weights.wpos.row(static_cast<Eigen::Index>(token_at(ctx_, dp_, tag.micro, r).position));
        }
        c[Field::EmbPartial] = std::move(x);
        return;
    }
    const Mat& g = need(c, ctx_.sp ? Field::GEmbFull : Field::GEmb);
    if (g.rows() != rows) throw std::runtime_error("embedding gradient has the wrong rows");
    for (int r = 0; r < rows; ++r) {
        const int token = token_id(ctx_, dp_, tag.micro, r);
        if (token >= lo && token < lo + shard) out_.grads.wemb.row(token - lo) += g.row(r);
        out_.grads.wpos.row(static_cast<Eigen::Index>(token_at(ctx_, dp_, tag.micro, r).position)) += g.row(r);
    }
    caches_.erase(key);
    finish_block(kEmbeddingBlock);
}

void RankRunner::embedding_dropout(Phase phase, const OpTag& tag) {
    const Key key{tag.micro, kEmbeddingBlock, 0};
    Cache& c = cache(key);
    if (phase == Phase::Forward) {
        act_[{tag.micro, 0}] = reduced(c, Field::EmbPartial, Field::EmbRed);
        caches_.erase(key);
    } else {
        c[Field::GEmb] = take(grad_, {tag.micro, 0}, "embedding output gradient");
        // ATP: the program's gather over the hidden axis (atp_edge_gather) made it the whole [M, h].
        if (atp() && c[Field::GEmb].cols() != ctx_.dims.hidden) throw std::runtime_error("embedding gradient not gathered over the hidden axis");
    }
}

void RankRunner::head(const OpCode& code, const OpTag& tag) {
    const Key key{tag.micro, kHeadBlock, 0};
    Cache& c = cache(key);
    const GptParams& w = out_.weights;
    const int layers = ctx_.dims.layers;
    const Field input = ctx_.sp ? Field::LnfFull : Field::Lnf;
    const bool fwd = code.phase == Phase::Forward;
    if (code.family == Family::FinalLn && fwd) {
        c[Field::LnfIn] = take(act_, {tag.micro, layers}, "final LayerNorm input");
        if (summa() || cube()) {  // 2d/3d: a [rows, h/q] block; its statistic all-reduce normalises it
            c[Field::Stats1] = row_sums(c[Field::LnfIn]);
            return;
        }
        // ATP: the program's gather over the hidden axis (atp_edge_gather) made it the whole [M, h].
        if (c[Field::LnfIn].cols() != ctx_.dims.hidden) throw std::runtime_error("final LayerNorm input not gathered over the hidden axis");
        c[Field::Lnf] = layer_norm(c[Field::LnfIn], w.lnf_g, w.lnf_b);
    } else if (code.family == Family::Logits && fwd) {
        c[Field::Logits] = need(c, input) * output_weight().transpose();  // tied: [V/t, h] rows of the vocabulary
        xent_reductions_ = 0;
        // Like Megatron's linear, the layer keeps only its shard: the weight gradient needs the
        // program's all-gather after the cross-entropy backward.
        if (ctx_.sp) c.erase(Field::LnfFull);
    } else if (code.family == Family::Xent && fwd) {
        const Mat& z = need(c, Field::Logits);
        const Mat mx = t() == 1 ? Mat(z.rowwise().maxCoeff()) : need(c, Field::XentMax);
        const int shard = ctx_.dims.vocab / t(), lo = tp() * shard;
        Mat target = Mat::Zero(z.rows(), 1), sumexp(z.rows(), 1);
        for (Eigen::Index r = 0; r < z.rows(); ++r) {
            sumexp(r, 0) = (z.row(r).array() - mx(r, 0)).exp().sum();
            const int y = target_id(ctx_, dp_, tag.micro, r);
            if (y >= lo && y < lo + shard) target(r, 0) = z(r, y - lo);
        }
        c[Field::XentMax] = mx;
        c[Field::XentTarget] = std::move(target);
        c[Field::XentSumExp] = std::move(sumexp);
        if (t() == 1) finish_xent(c);
    } else if (code.family == Family::Xent) {
        need(c, Field::XentDone);
        const Mat& z = need(c, Field::Logits);
        Mat dz = ((z.colwise() - need(c, Field::XentMax).col(0)).array().exp()).matrix();
        dz = dz.array().colwise() / need(c, Field::XentSumExp).col(0).array();
        const int shard = ctx_.dims.vocab / t(), lo = tp() * shard;
        for (Eigen::Index r = 0; r < z.rows(); ++r) {
            const int y = target_id(ctx_, dp_, tag.micro, r);
            if (y >= lo && y < lo + shard) dz(r, y - lo) -= 1.0;
        }
        c[Field::DLogits] = dz / total_tokens(ctx_);  // the loss is the mean over every token
    } else if (code.family == Family::Logits) {
        if (code.wgrad) output_grad() += need(c, Field::DLogits).transpose() * need(c, input);
        else c[Field::DLnfPartial] = need(c, Field::DLogits) * output_weight();
    } else if (summa() || cube()) {  // final LayerNorm backward on the block; its statistic all-reduce completes it
        const auto [r, rs, col, cols] = edge_block(tp_);
        const Eigen::Index n = ctx_.dims.hidden / cols, c0 = n * col;
        const Mat xhat = normalised(need(c, Field::LnfIn), need(c, Field::Stats1Sum), ctx_.dims.hidden);
        const Mat& dy = need(c, Field::DLnf);
        // Partial over the block's rows: the program's tp.grad_allreduce sums them.
        out_.grads.lnf_g.middleCols(c0, n) += column_sums(dy.cwiseProduct(xhat));
        out_.grads.lnf_b.middleCols(c0, n) += column_sums(dy);
        c[Field::DStats1] = norm_grad_sums(xhat, w.lnf_g.middleCols(c0, n), dy);
    } else {  // final LayerNorm backward
        const LnGrads l = layer_norm_backward(need(c, Field::LnfIn), w.lnf_g, reduced(c, Field::DLnfPartial, Field::DLnf));
        out_.grads.lnf_g += l.dg;
        out_.grads.lnf_b += l.db;
        grad_[{tag.micro, layers}] = l.dx;
        caches_.erase(key);
        finish_block(kHeadBlock);
    }
}

// 2d/3d: the final LayerNorm's statistics summed over the devices of the block's rows (forward:
// then normalise the block; backward: then its input gradient).
void RankRunner::final_norm_statistics(const sim::Op& op, const OpTag& tag, Phase phase) {
    const Key key{tag.micro, kHeadBlock, 0};
    Cache& c = cache(key);
    const GptParams& w = out_.weights;
    const int h = ctx_.dims.hidden;
    const auto [r, rs, col, cols] = edge_block(tp_);
    const Eigen::Index n = h / cols, c0 = n * col;
    const Field src = phase == Phase::Backward ? Field::DStats1 : Field::Stats1;
    const Mat totals = collective(op, op.group_slot, need(c, src), "final LayerNorm statistics");
    if (phase != Phase::Backward) {
        c[Field::Stats1Sum] = totals;
        c[Field::Lnf] = scale_shift(normalised(need(c, Field::LnfIn), totals, h), w.lnf_g.middleCols(c0, n), w.lnf_b.middleCols(c0, n));
        return;
    }
    const Mat& stats = need(c, Field::Stats1Sum);
    const Mat xhat = normalised(need(c, Field::LnfIn), stats, h);
    grad_[{tag.micro, ctx_.dims.layers}] = norm_input_grad(xhat, w.lnf_g.middleCols(c0, n), need(c, Field::DLnf), rstd_of(stats, h), totals, h);
    caches_.erase(key);
    finish_block(kHeadBlock);
}

// Loss of the micro-batch's tokens: log(sum exp(z - max)) + max - z_target per token.
void RankRunner::finish_xent(Cache& c) {
    const Mat& mx = need(c, Field::XentMax);
    const Mat& se = need(c, Field::XentSumExp);
    const Mat& tg = need(c, Field::XentTarget);
    double sum = 0.0;
    for (Eigen::Index r = 0; r < mx.rows(); ++r) sum += std::log(se(r, 0)) + mx(r, 0) - tg(r, 0);
    out_.loss += sum / total_tokens(ctx_);
    c[Field::XentDone] = Mat::Zero(1, 1);
}

}  // namespace cuboid::cpu
