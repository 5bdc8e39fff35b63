// Causal attention of queries against one block of keys, by global positions, as the fused
// kernels of context parallelism run it (FlashAttention's partial output and log-sum-exp): the
// partial results of several key blocks merge exactly into attention over all of them (the
// online-softmax rule), and the backward of one block needs only the final output and log-sum-exp.
//
// Layout: q, the output and its gradient are [seqs * queries, heads * head_dim], k and v (and their
// gradients) [seqs * keys, heads * head_dim], each sequence's rows in the order of its position
// list; the log-sum-exp is [seqs * queries, heads]. A query sees the keys at or before its
// position; a row that sees none in a block has log-sum-exp -inf and output 0.
#pragma once

#include <vector>

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

struct BlockShape {
    int seqs = 1, heads = 0, head_dim = 0;
    std::vector<int> queries, keys;  // positions of each sequence's query / key rows
};

struct PartialAttention {
    Mat out, lse;
};
PartialAttention block_attention(const Mat& q, const Mat& k, const Mat& v, const BlockShape& s, double scale);
// Folds `step` into `acc`: the softmax over the union of both blocks' keys.
void merge_partial(PartialAttention& acc, const PartialAttention& step, int heads);

struct BlockGrads {
    Mat dq, dk, dv;
};
// The block's share of the gradients, from the final output and log-sum-exp over all keys.
BlockGrads block_attention_backward(const Mat& q, const Mat& k, const Mat& v, const Mat& out, const Mat& dout,
                                    const Mat& lse, const BlockShape& s, double scale);

// Positions of a sequence that rank i of c holds under the 2c-chunk split: chunks i and 2c-1-i.
std::vector<int> context_positions(int seq, int c, int i);

}  // namespace cuboid::cpu
