// The arithmetic of a mixture-of-experts MLP, shared by the single-device reference and the
// executor (which differ only in where the token copies are computed):
//
// Router: logits = x * wr ([tokens, experts]); each token goes to the top_k experts of largest
// logit (ties: the lower index), weighted by the softmax of those k logits. This is Megatron-Core's
// default (moe_router_pre_softmax off: topk on the logits, then softmax over the k scores), so the
// weights of a token sum to 1; with top_k = 1 every weight is 1 and the router gets no gradient
// (Megatron trains it through its auxiliary loss then, which is not modelled).
//
// Experts: each copy (token, j) runs through its expert's MLP, y = gelu(x W1 + b1) W2 + b2, and the
// token's output is sum_j weight(token, j) * y(token, j).
//
// A set of experts' weights is a slice of them side by side (tiny_gpt.hpp Split::Expert*): the
// whole model (first 0, all experts, width f) or one rank's (its E/ep experts, part a of etp of
// each, width f/etp).
#pragma once

#include <vector>

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

struct Routing {
    std::vector<int> expert;  // expert of copy token * top_k + j
    Mat weight;               // [tokens, top_k]
    int top_k = 1;
};
Routing route(const Mat& logits, int top_k);
// d logits [tokens, experts] from d weight [tokens, top_k].
Mat route_backward(const Routing& r, const Mat& dweight, int experts);

// The copies of every token in expert order (stable: token order within an expert): the order
// the dispatcher's permutation sends them in. Entry i is the copy index token * top_k + j.
std::vector<int> copies_by_expert(const Routing& r);

struct ExpertSlice {
    const Mat* w1 = nullptr;  // [h, count * width]
    const Mat* b1 = nullptr;  // [1, count * width]
    const Mat* w2 = nullptr;  // [count * width, h]
    const Mat* b2 = nullptr;  // [count, h]
    int first = 0, count = 0, width = 0;
    bool add_fc2_bias = true;  // false: another rank of the expert-tensor group adds it
    int local(int expert) const;  // index in the slice; throws for an expert the slice does not hold
};

// Row r of `x` belongs to expert ids[r]: the grouped GEMMs run each expert's rows with its weights.
Mat expert_fc1(const Mat& x, const std::vector<int>& ids, const ExpertSlice& s);
Mat expert_fc2(const Mat& g, const std::vector<int>& ids, const ExpertSlice& s);
Mat expert_fc2_dgrad(const Mat& dy, const std::vector<int>& ids, const ExpertSlice& s);
Mat expert_fc1_dgrad(const Mat& da, const std::vector<int>& ids, const ExpertSlice& s);
// Weight (and bias) gradients accumulated into the slice-shaped gw, gb.
void expert_fc2_wgrad(const Mat& g, const Mat& dy, const std::vector<int>& ids, const ExpertSlice& s, Mat& gw, Mat& gb);
void expert_fc1_wgrad(const Mat& x, const Mat& da, const std::vector<int>& ids, const ExpertSlice& s, Mat& gw, Mat& gb);

}  // namespace cuboid::cpu
