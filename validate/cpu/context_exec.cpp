// Context parallelism on one rank (strategies/context_attention.hpp): the rank holds chunks cp and
// 2c-1-cp of each sequence of its micro-batch (edge_exec.cpp), and its attention core sees the
// keys and values of the other c-1 ranks only through the mode's collectives:
//   ring: step j attends the local queries to the K/V block of context rank cp - j (its own at
//     step 0); each exchange passes the block held for step e to the next rank and receives the
//     one for step e+1 from the previous. Steps after the first merge their partial output by the
//     log-sum-exps. The backward repeats the steps from the stored output and log-sum-exp; each
//     block's partial dK/dV travels one rank behind the block (a dK/dV exchange after every
//     step) and comes home complete after the last.
//   all-gather: K/V of every position gathered, one kernel, dK/dV of every position
//     reduce-scattered back to their owners.
//   all-to-all: Q, K, V turned from [own positions, the tensor rank's heads] into [every position,
//     heads/c], one kernel, the output turned back; the backward mirrors both.
// Every missing collective leaves a block, a gradient or a tensor absent and the op needing it
// names it.
#include <cmath>
#include <stdexcept>
#include <string>

#include "validate/cpu/blockwise_attention.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

Mat side_by_side(const std::vector<const Mat*>& parts) {
    Eigen::Index cols = 0;
    for (const Mat* m : parts) cols += m->cols();
    Mat out(parts.front()->rows(), cols);
    Eigen::Index at = 0;
    for (const Mat* m : parts) {
        out.middleCols(at, m->cols()) = *m;
        at += m->cols();
    }
    return out;
}

// Columns [col, col + n) of every member's rows, sequence by sequence (member 0's positions of
// sequence 0, member 1's, ..., then sequence 1): the rows of every position, each sequence's in
// the order of all_positions().
Mat interleave_members(const std::vector<Mat>& parts, int seqs, Eigen::Index col, Eigen::Index n) {
    const auto c = static_cast<Eigen::Index>(parts.size()), rows = parts.front().rows() / seqs;
    Mat out(seqs * c * rows, n);
    for (Eigen::Index q = 0; q < seqs; ++q)
        for (Eigen::Index i = 0; i < c; ++i)
            out.middleRows((q * c + i) * rows, rows) = parts[static_cast<std::size_t>(i)].block(q * rows, col, rows, n);
    return out;
}

// Member `me`'s rows of a tensor of every position (the inverse of interleave_members).
Mat member_rows(const Mat& all, int seqs, int c, int me) {
    const Eigen::Index rows = all.rows() / (static_cast<Eigen::Index>(seqs) * c);
    Mat out(seqs * rows, all.cols());
    for (Eigen::Index q = 0; q < seqs; ++q) out.middleRows(q * rows, rows) = all.middleRows((q * c + me) * rows, rows);
    return out;
}

// The all-to-all back from the head split: member i sent columns [col, col + n) of every position
// for its head block i; `me` keeps its rows of each, placed at head block i.
Mat heads_to_sequence(const std::vector<Mat>& parts, int seqs, int me, Eigen::Index col, Eigen::Index n) {
    const int c = static_cast<int>(parts.size());
    std::vector<Mat> blocks;
    for (const Mat& p : parts) blocks.push_back(member_rows(p.middleCols(col, n), seqs, c, me));
    std::vector<const Mat*> ptrs;
    for (const Mat& m : blocks) ptrs.push_back(&m);
    return side_by_side(ptrs);
}

Mat left_half(const Mat& m) { return m.leftCols(m.cols() / 2); }
Mat right_half(const Mat& m) { return m.rightCols(m.cols() / 2); }

}  // namespace

std::vector<Mat> RankRunner::context_exchange(const sim::Op& op, const Mat& in, const std::string& what) {
    std::size_t member = 0;
    std::vector<Mat> parts = exchange_mats(op.group_slot, label(op) + "#" + std::to_string(static_cast<int>(op.kind)), in, &member);
    if (static_cast<int>(member) != cp_ || static_cast<int>(parts.size()) != ctx_.context)
        throw std::runtime_error(what + " not over the context group in ring order");
    for (const Mat& m : parts)
        if (m.rows() != in.rows() || m.cols() != in.cols()) throw std::runtime_error(what + ": members' buffers differ in shape");
    return parts;
}

// The K/V block ring step `step` works on: the rank's own at step 0 (context rank cp), else the one
// an exchange delivered (context rank cp - step's), taken by the step that uses it (`take`) or
// copied by the exchange that passes it on.
Mat RankRunner::ring_block(const Key& key, Phase phase, int step, bool take) {
    if (step == 0) return side_by_side({&need(cache(key), Field::K), &need(cache(key), Field::V)});
    const auto it = ring_blocks_.find({key, phase, step});
    if (it == ring_blocks_.end()) {
        const int owner = (cp_ - step + ctx_.context) % ctx_.context;
        throw std::runtime_error("needs the K/V block of ring step " + std::to_string(step) + (take ? "" : " to pass on") +
                                 " (context rank " + std::to_string(owner) + "'s), which no ring exchange delivered");
    }
    if (!take) return it->second;
    Mat block = std::move(it->second);
    ring_blocks_.erase(it);
    return block;
}

void RankRunner::ring_exchange(const sim::Op& op, const Key& key, Phase phase) {
    if (op.kind != sim::OpKind::RingExchange) throw std::runtime_error("ring exchange expected as a RingExchange op");
    const int e = ring_count_[{key, phase, ContextOp::Exchange}]++, c = ctx_.context;
    if (e + 1 >= c) throw std::runtime_error("more ring exchanges than c - 1 = " + std::to_string(c - 1));
    const std::vector<Mat> parts = context_exchange(op, ring_block(key, phase, e, false), "ring exchange");
    ring_blocks_[{key, phase, e + 1}] = parts[static_cast<std::size_t>((cp_ + c - 1) % c)];  // from the previous rank
}

void RankRunner::dkv_exchange(const sim::Op& op, const Key& key) {
    if (op.kind != sim::OpKind::RingExchange) throw std::runtime_error("dK/dV exchange expected as a RingExchange op");
    const int e = ring_count_[{key, Phase::Backward, ContextOp::DkvExchange}]++, c = ctx_.context;
    if (e >= c) throw std::runtime_error("more dK/dV exchanges than c = " + std::to_string(c));
    Cache& cc = cache(key);
    const std::vector<Mat> parts = context_exchange(op, need(cc, Field::DkvOut), "dK/dV exchange");
    cc.erase(Field::DkvOut);
    const Mat& got = parts[static_cast<std::size_t>((cp_ + c - 1) % c)];
    if (e + 1 < c) {
        ring_dkv_[{key, e + 1}] = got;
        return;
    }
    cc[Field::DK] = left_half(got);  // after c steps: this rank's own block, complete
    cc[Field::DV] = right_half(got);
}

void RankRunner::context_kernel(const OpCode& code, const OpTag& tag, const sim::Op& op) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const Phase phase = code.phase;
    const GptDims& d = ctx_.dims;
    const int cp = ctx_.context, heads = d.heads / t();
    const double scale = attention_scale();
    int& steps = ring_count_[{key, phase, ContextOp::Step}];
    if (code.context == ContextOp::Merge) {
        if (steps < 2) throw std::runtime_error("ring merge before a second step");
        PartialAttention acc{need(c, Field::OutAcc), need(c, Field::LseAcc)};
        merge_partial(acc, {need(c, Field::StepOut), need(c, Field::StepLse)}, heads);
        for (Field f : {Field::StepOut, Field::StepLse, Field::OutAcc, Field::LseAcc}) c.erase(f);
        if (steps < cp) {
            c[Field::OutAcc] = std::move(acc.out);
            c[Field::LseAcc] = std::move(acc.lse);
            return;
        }
        put(c, key, Field::Ctx, std::move(acc.out), phase);
        put(c, key, Field::Lse, std::move(acc.lse), phase);
        return;
    }
    if (code.context != ContextOp::Step) throw std::runtime_error("not a context-parallel kernel");
    const int j = steps++;
    if (j >= cp) throw std::runtime_error("more ring steps than c = " + std::to_string(cp));
    if (phase == Phase::Forward && j == 0 && op.memory_alloc.value == 0.0)
        for (Field f : {Field::Q, Field::K, Field::V, Field::Lse}) unkept_[key].push_back(f);
    const int owner = (cp_ - j + cp) % cp;
    const Mat block = ring_block(key, phase, j, true);
    const BlockShape s{ctx_.micro_batch, heads, d.head_dim(), context_positions(d.seq, cp, cp_), context_positions(d.seq, cp, owner)};
    if (phase != Phase::Backward) {
        PartialAttention p = block_attention(need(c, Field::Q), left_half(block), right_half(block), s, scale);
        c[j == 0 ? Field::OutAcc : Field::StepOut] = std::move(p.out);
        c[j == 0 ? Field::LseAcc : Field::StepLse] = std::move(p.lse);
        return;
    }
    const BlockGrads g = block_attention_backward(need(c, Field::Q), left_half(block), right_half(block), need(c, Field::Ctx),
                                                  need(c, Field::DCtx), need(c, Field::Lse), s, scale);
    if (j == 0) c[Field::DQ] = g.dq;
    else c[Field::DQ] = need(c, Field::DQ) + g.dq;
    Mat partial = side_by_side({&g.dk, &g.dv});
    if (j > 0) {  // what the ranks before added to this block's dK/dV
        const auto it = ring_dkv_.find({key, j});
        if (it == ring_dkv_.end())
            throw std::runtime_error("needs the partial dK/dV of ring step " + std::to_string(j) +
                                     ", which no dK/dV exchange delivered");
        partial += it->second;
        ring_dkv_.erase(it);
    }
    c[Field::DkvOut] = std::move(partial);
}

std::vector<int> RankRunner::all_positions() const {
    std::vector<int> all;
    for (int i = 0; i < ctx_.context; ++i)
        for (int p : context_positions(ctx_.dims.seq, ctx_.context, i)) all.push_back(p);
    return all;
}

// The one kernel of the all-gather and all-to-all modes: the local queries against every position,
// or every position on heads/c of the tensor rank's heads.
BlockShape RankRunner::context_kernel_shape() const {
    const GptDims& d = ctx_.dims;
    const int cp = ctx_.context, heads = d.heads / t();
    if (ctx_.layout->context_mode == ContextMode::AllGather)
        return {ctx_.micro_batch, heads, d.head_dim(), context_positions(d.seq, cp, cp_), all_positions()};
    if (ctx_.layout->context_mode != ContextMode::AllToAll) throw std::runtime_error("one attention kernel under ring context parallelism");
    return {ctx_.micro_batch, heads / cp, d.head_dim(), all_positions(), all_positions()};
}

double RankRunner::attention_scale() const { return 1.0 / std::sqrt(static_cast<double>(ctx_.dims.head_dim())); }

void RankRunner::context_attention(Phase phase, const Key& key) {
    Cache& c = cache(key);
    const BlockShape s = context_kernel_shape();
    if (ctx_.layout->context_mode == ContextMode::AllGather) {
        const Mat& kv = need(c, Field::KvAll);
        PartialAttention p = block_attention(need(c, Field::Q), left_half(kv), right_half(kv), s, attention_scale());
        c.erase(Field::KvAll);  // freed after the kernel
        put(c, key, Field::Ctx, std::move(p.out), phase);
        put(c, key, Field::Lse, std::move(p.lse), phase);
        return;
    }
    const Mat &q = need(c, Field::QH), &k = need(c, Field::KH), &v = need(c, Field::VH);  // named in this order
    PartialAttention p = block_attention(q, k, v, s, attention_scale());
    put(c, key, Field::OH, std::move(p.out), phase);
    put(c, key, Field::Lse, std::move(p.lse), phase);
}

void RankRunner::context_attention_backward(const Key& key) {
    Cache& c = cache(key);
    const BlockShape s = context_kernel_shape();
    if (ctx_.layout->context_mode == ContextMode::AllGather) {
        const Mat& kv = need(c, Field::KvAll);
        const BlockGrads g = block_attention_backward(need(c, Field::Q), left_half(kv), right_half(kv), need(c, Field::Ctx),
                                                      need(c, Field::DCtx), need(c, Field::Lse), s, attention_scale());
        c.erase(Field::KvAll);
        c[Field::DQ] = g.dq;
        c[Field::DKvAll] = side_by_side({&g.dk, &g.dv});  // every position's: the reduce-scatter sums them
        return;
    }
    BlockGrads g = block_attention_backward(need(c, Field::QH), need(c, Field::KH), need(c, Field::VH), need(c, Field::OH),
                                            need(c, Field::DCtxH), need(c, Field::Lse), s, attention_scale());
    c[Field::DQH] = std::move(g.dq);
    c[Field::DKH] = std::move(g.dk);
    c[Field::DVH] = std::move(g.dv);
}

void RankRunner::context_comm(const OpCode& code, const OpTag& tag, const sim::Op& op) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const Phase phase = code.phase;
    const int b = ctx_.micro_batch;
    const bool back = phase == Phase::Backward;
    switch (code.context) {
        case ContextOp::Exchange: return ring_exchange(op, key, phase);
        case ContextOp::DkvExchange: return dkv_exchange(op, key);
        case ContextOp::Gather: {
            const auto parts = context_exchange(op, side_by_side({&need(c, Field::K), &need(c, Field::V)}), "K/V all-gather");
            c[Field::KvAll] = interleave_members(parts, b, 0, parts.front().cols());
            return;
        }
        case ContextOp::ReduceScatter: {
            const auto parts = context_exchange(op, need(c, Field::DKvAll), "dK/dV reduce-scatter");
            Mat sum = Mat::Zero(parts.front().rows(), parts.front().cols());
            for (const Mat& p : parts) sum += p;
            const Mat mine = member_rows(sum, b, ctx_.context, cp_);
            c.erase(Field::DKvAll);
            c[Field::DK] = left_half(mine);
            c[Field::DV] = right_half(mine);
            return;
        }
        case ContextOp::QkvAllToAll: {
            const Field q = back ? Field::DQH : Field::Q, k = back ? Field::DKH : Field::K, v = back ? Field::DVH : Field::V;
            const Eigen::Index w = need(c, q).cols(), n = back ? w : w / ctx_.context;
            const auto parts = context_exchange(op, side_by_side({&need(c, q), &need(c, k), &need(c, v)}), "Q/K/V all-to-all");
            if (back) {  // dQ, dK, dV of every position on heads/c back to the own positions on every head
                c[Field::DQ] = heads_to_sequence(parts, b, cp_, 0, n);
                c[Field::DK] = heads_to_sequence(parts, b, cp_, w, n);
                c[Field::DV] = heads_to_sequence(parts, b, cp_, 2 * w, n);
                for (Field f : {Field::DQH, Field::DKH, Field::DVH}) c.erase(f);
                return;
            }
            put(c, key, Field::QH, interleave_members(parts, b, cp_ * n, n), phase);
            put(c, key, Field::KH, interleave_members(parts, b, w + cp_ * n, n), phase);
            put(c, key, Field::VH, interleave_members(parts, b, 2 * w + cp_ * n, n), phase);
            return;
        }
        case ContextOp::OutAllToAll: {
            if (back) {
                const Eigen::Index n = need(c, Field::DCtx).cols() / ctx_.context;
                const auto parts = context_exchange(op, need(c, Field::DCtx), "output gradient all-to-all");
                c[Field::DCtxH] = interleave_members(parts, b, cp_ * n, n);
                return;
            }
            const auto parts = context_exchange(op, need(c, Field::OH), "output all-to-all");
            put(c, key, Field::Ctx, heads_to_sequence(parts, b, cp_, 0, parts.front().cols()), phase);
            return;
        }
        default: throw std::runtime_error("not a context-parallel collective");
    }
}

}  // namespace cuboid::cpu
