// A tiny GPT in double precision: its sizes, parameters, a batch of tokens, and how Megatron's 1d
// tensor parallelism splits each parameter over t ranks. Shared by the single-device reference
// and the CPU executor, so that both start from the same weights and inputs.
//
// Mixture of experts (ModelSpec::experts > 0): every layer from dense_layers on replaces the dense
// MLP with a router (wr, no bias) over `experts` GeLU expert MLPs of expert_ffn (with biases, as
// strategies/model_math.cpp counts them for a GeLU model), top_k of them per token, plus an
// optional shared-expert MLP of shared_ffn every token passes through (moe_math.hpp).
//
// The output layer is tied to the word embedding, as in GPT: logits = LayerNorm(x) * wemb^T. With
// p > 1 the last stage holds a copy (`wout`, Megatron-LM's word_embeddings copy in the output
// layer) that starts equal to wemb; the program's emb.grad_allreduce sums the two stages'
// gradients, so both apply the same update.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "strategies/scenario.hpp"

namespace cuboid::cpu {

using Mat = Eigen::MatrixXd;  // activations are [tokens, features], one row per token

struct GptDims {
    int layers = 0, hidden = 0, heads = 0, ffn = 0, seq = 0, vocab = 0;
    int experts = 0, top_k = 1, expert_ffn = 0, shared_ffn = 0, dense_layers = 0;  // experts == 0: dense
    int head_dim() const { return hidden / heads; }
    bool moe_layer(int layer) const { return experts > 0 && layer >= dense_layers; }
    static GptDims of(const ModelSpec& m);  // GPT style only (no SwiGLU, no grouped-query attention, head_dim = hidden / heads)
};

// Megatron 1d split of a parameter over the tensor group.
enum class Split : std::uint8_t {
    Replicated,  // LayerNorms, row-parallel biases, positions
    Columns,     // column-parallel weight / bias (FC1)
    Rows,        // row-parallel weight (projection, FC2), the vocabulary-parallel embedding and its copy
    QkvColumns,  // QKV: the rank's heads of each of Q, K and V
    // The routed experts, split by expert over the expert group and within an expert over the
    // expert-tensor group (not over the tensor group): expert_shard_of.
    ExpertColumns,  // FC1 weight [h, E*f] / bias [1, E*f]: expert x's columns [x*f, (x+1)*f), split etp ways
    ExpertRows,     // FC2 weight [E*f, h]: expert x's rows, split etp ways
    ExpertBias,     // FC2 bias [E, h]: one row per expert, whole on each expert-tensor rank
};
inline bool is_expert(Split s) { return s == Split::ExpertColumns || s == Split::ExpertRows || s == Split::ExpertBias; }

struct LayerParams {
    Mat ln1_g, ln1_b, wqkv, bqkv, wproj, bproj, ln2_g, ln2_b, w1, b1, w2, b2;  // biases are 1 x n
    // A mixture-of-experts layer holds these in place of w1..b2: the router, the routed experts
    // (all experts side by side, see Split) and the shared experts' MLP (split like the dense one).
    bool moe = false, shared = false;
    Mat wr, ew1, eb1, ew2, eb2, sw1, sb1, sw2, sb2;
};

// Parameters (or gradients) of a model, or the part of them one rank holds: empty matrices for
// the parts it does not hold.
struct GptParams {
    Mat wemb, wpos;                  // [V, h], [s, h]
    std::vector<LayerParams> layers;
    Mat lnf_g, lnf_b, wout;          // wout: [V, h], the output layer's copy of wemb (equal in a whole model)
};

// Block of parameters reduced together: a layer, the embedding (-1) or the head (-2).
inline constexpr int kEmbeddingBlock = -1;
inline constexpr int kHeadBlock = -2;

struct ParamRef {
    int block = 0;
    const char* name = "";
    Split split = Split::Replicated;
};

// Calls f(ref, matrix) for every parameter of every block in a fixed order.
void for_each_param(GptParams& p, const std::function<void(const ParamRef&, Mat&)>& f);
void for_each_param(const GptParams& p, const std::function<void(const ParamRef&, const Mat&)>& f);
// Only the parameters of one block.
void for_each_param_of(GptParams& p, int block, const std::function<void(const ParamRef&, Mat&)>& f);

// Deterministic small random weights (LayerNorm scales near 1) from `seed`.
GptParams init_params(const GptDims& d, std::uint64_t seed);
// The layers' kinds (dense or mixture of experts, with or without shared experts) of `like`, no
// matrices: what a rank fills with the shards it holds.
GptParams empty_like(const GptParams& like);
// Same shapes, all zero.
GptParams zeros_like(const GptParams& p);

// Shard `full` of tensor rank `i` of `t`, and the inverse (writes the shard into `full`).
Mat shard_of(const Mat& full, Split split, const GptDims& d, int i, int t);
void place_shard(Mat& full, const Mat& shard, Split split, const GptDims& d, int i, int t);

// A rank's place in the expert layers: index e of the ep ranks of its expert group (it holds
// experts [e*E/ep, (e+1)*E/ep)) and index a of the etp ranks of its expert-tensor group (it holds
// part a of each of those experts).
struct ExpertCoord {
    int e = 0, ep = 1, a = 0, etp = 1;
};
Mat expert_shard_of(const Mat& full, Split split, const GptDims& d, const ExpertCoord& c);
void place_expert_shard(Mat& full, const Mat& shard, Split split, const GptDims& d, const ExpertCoord& c);

// The global batch: tokens[sequence][position] and the next-token targets.
struct Batch {
    std::vector<std::vector<int>> tokens, targets;
};
Batch make_batch(const GptDims& d, int sequences, std::uint64_t seed);

}  // namespace cuboid::cpu
