// The math of the GPT's memory-bound kernels, row-wise on [tokens, features] matrices, shared by
// the reference and the executor (the strategies differ only in how work and data are split, so
// these need to be right once; the reference's gradients are checked by finite differences).
//
// Dropout is the identity (probability 0): masks are random and would only need a shared seed;
// they add nothing to whether a strategy moves the right data.
#pragma once

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

inline constexpr double kLnEps = 1e-5;

Mat layer_norm(const Mat& x, const Mat& g, const Mat& b);
struct LnGrads {
    Mat dx, dg, db;
};
LnGrads layer_norm_backward(const Mat& x, const Mat& g, const Mat& dy);

// LayerNorm over a hidden size split across devices (2d, 3d, atp): the block's per-row sum and
// sum of squares, all-reduced over the devices of the row into `totals`, normalise the block;
// in the backward the two row sums of the gradient (norm_grad_sums), all-reduced likewise, give
// the input gradient. `h` is the whole hidden size.
Mat row_sums(const Mat& x);
Mat normalised(const Mat& x, const Mat& totals, int h);
Mat rstd_of(const Mat& totals, int h);
Mat scale_shift(const Mat& xhat, const Mat& g, const Mat& b);
Mat norm_grad_sums(const Mat& xhat, const Mat& g, const Mat& dy);
Mat norm_input_grad(const Mat& xhat, const Mat& g, const Mat& dy, const Mat& rstd, const Mat& totals, int h);

// GeLU, tanh approximation (GPT-2 / Megatron's bias_gelu).
Mat gelu(const Mat& x);
Mat gelu_backward(const Mat& x, const Mat& dy);

// Causal attention of one head of one sequence: scores = q k^T (s x s); the softmax applies the
// 1/sqrt(head_dim) scale and masks keys after the query (Megatron's scale_mask_softmax).
// `queries` (0: square blocks) is the rows of each block when a block holds the last `queries`
// positions of its sequence against every key up to the last of them (a sub-batch cut along the
// sequence): query i of the block then sees keys [0, cols - queries + i].
Mat causal_softmax(const Mat& scores, double scale, int queries = 0);
Mat causal_softmax_backward(const Mat& probs, const Mat& dprobs, double scale);

// Attention core over `seqs` sequences of `seq` query tokens and `heads` heads of `head_dim`: q and
// the context are [seqs*seq, heads*head_dim], k and v [seqs*keys, heads*head_dim]; scores and
// probabilities are the [seq, keys] blocks of every (sequence, head) stacked: [seqs*heads*seq, keys].
// keys == 0 means keys == seq (the queries are the whole sequence).
struct AttnShape {
    int seqs = 1, seq = 0, heads = 0, head_dim = 0, keys = 0;
    int key_rows() const { return keys > 0 ? keys : seq; }
};
Mat attn_scores(const Mat& q, const Mat& k, const AttnShape& a);
Mat attn_context(const Mat& probs, const Mat& v, const AttnShape& a);
// Backward of the batched products: context = probs v (d probs, d v); scores = q k^T (d q, d k).
Mat attn_dprobs(const Mat& dctx, const Mat& v, const AttnShape& a);
Mat attn_dv(const Mat& probs, const Mat& dctx, const AttnShape& a);
Mat attn_dq(const Mat& dscores, const Mat& k, const AttnShape& a);
Mat attn_dk(const Mat& dscores, const Mat& q, const AttnShape& a);

// Adds the 1 x n row `bias` to every row.
Mat add_bias(const Mat& x, const Mat& bias);
Mat column_sums(const Mat& x);

// Rows [i * rows/t, (i+1) * rows/t) of x: a rank's sequence-parallel shard; and the inverse.
Mat row_block(const Mat& x, int i, int t);
Mat stack_rows(const std::vector<Mat>& blocks);

}  // namespace cuboid::cpu
