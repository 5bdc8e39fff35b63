// Closed-form figures of a model: parameter counts and FLOPs per iteration.
//
// FLOPs count matrix products only (2*m*n*k each), as the output contract asks: attention scores
// and logits included, LayerNorm/softmax/elementwise kernels excluded.
#pragma once

#include "strategies/scenario.hpp"

namespace cuboid {

// Parameters of one transformer layer. GPT style (swiglu == false): QKV, projection, FC1, FC2
// with biases and two LayerNorms (scale and bias). Llama style (swiglu == true): no biases, gate
// and up projections, two RMSNorms (scale only).
double layer_parameter_count(const ModelSpec& m);
// Of those, what one rank of a t-way tensor group holds: column/row-split matrices and the
// column-split biases divided by t, norms and the row-parallel output biases replicated.
double layer_parameter_count_per_rank(const ModelSpec& m, int t);
// One layer's parameters on one rank, split by the group that reduces their gradients: `dense`
// over the data x context replicas (attention, norms, the router, shared experts, a dense MLP),
// `expert` over the expert-data group (the routed experts). Rank of a plan with tensor t, expert
// ep and expert_tensor etp: attention and shared experts split t ways (norms, row-parallel
// biases and the router replicated), the routed experts experts/ep per rank, each split etp ways.
// A dense model's layer (or one of the first dense_layers) has no expert part.
struct LayerParameters {
    double dense = 0.0;
    double expert = 0.0;
    double total() const { return dense + expert; }
};
LayerParameters layer_parameters(const ModelSpec& m, int layer, int t, int ep = 1, int etp = 1);
// Input side: word embeddings V*h, plus learned positions s*h for GPT.
double embedding_parameter_count(const ModelSpec& m);
// Output side: final norm, plus the untied output matrix V*h for Llama (GPT ties it to the
// input embedding; Megatron keeps a copy on the last stage when p > 1, see program memory).
double head_parameter_count(const ModelSpec& m);
// The multi-token prediction modules (ModelSpec::mtp_layers) of one rank of the last stage: per
// module a layer like the model's last (its dense and expert parts as layer_parameters), the
// projection 2h x h and three RMSNorm scales (the two inputs' and the module's final norm). The
// module shares the embedding and the output head (the embedding's copy on the last stage is
// tied_embedding_copy_per_rank).
LayerParameters mtp_parameters(const ModelSpec& m, int t, int ep = 1, int etp = 1);
// Whole model: layers * layer + embedding + head (+ the multi-token prediction modules). GPT: 12*l*h^2 + 13*l*h + (V + s)*h + 2h
// (Narayanan et al. 2021, eq. for P); gpt3-175b gives 174.6e9.
double parameter_count(const ModelSpec& m);

// Forward FLOPs of one layer for `sequences` sequences, summed over the layer's GEMMs.
// Standard GPT: 24*b*s*h^2 + 4*b*s^2*h.
double layer_forward_flops(const ModelSpec& m, double sequences);
// The same for global layer `layer`: a mixture-of-experts layer counts its active parameters,
// the attention GEMMs, the router (2*b*s*h*experts), experts_per_token routed experts' MLPs and
// the shared experts' MLP per token.
double layer_forward_flops(const ModelSpec& m, double sequences, int layer);
// Forward FLOPs of the attention core alone (QK^T and attention x V): 4*b*s^2*h.
double attention_core_forward_flops(const ModelSpec& m, double sequences);
// Forward FLOPs of the logits GEMM: 2*b*s*h*V.
double logits_forward_flops(const ModelSpec& m, double sequences);

// Model FLOPs per iteration (contract): forward + backward (backward = 2x forward) of every
// GEMM, no recomputation. Reduces to 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) for a 4h GeLU MLP.
double model_flops_per_iteration(const ModelSpec& m, int global_batch);
// The closed form of Narayanan et al. (SC'21, eq. 3 without recompute) for a standard GPT.
double megatron_model_flops(const ModelSpec& m, int global_batch);
// Forward work repeated by a recompute policy per iteration: full = every layer's forward
// (not the logits), selective = the attention core, none = 0. Stage-aware is policy-dependent
// and is not covered here.
double recompute_flops_per_iteration(const ModelSpec& m, int global_batch, Recompute r);

}  // namespace cuboid
