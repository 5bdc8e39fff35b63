// Activation bytes one transformer layer keeps for its backward, per forward kernel, after
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
// Section 4; seed_algorithms §5.3). With 16-bit activations and 1-byte dropout masks, one layer
// and micro-batch keeps, without parallelism, s*b*h*(34 + 5*a*s/h) bytes:
//   attention 13sbh + 5as^2b (11sbh without its LayerNorm input): LayerNorm input 2sbh, QKV input 2sbh, Q and K 4sbh, softmax output
//   2as^2b, dropout mask as^2b, dropout output 2as^2b, V 2sbh, projection input 2sbh, mask sbh;
//   MLP 21sbh (19sbh without its LayerNorm input): LayerNorm input 2sbh, FC1 input 2sbh, GeLU input 8sbh, FC2 input 8sbh, mask sbh.
// Fused attention (FlashAttention, cuDNN) keeps no s x s tensor: Q, K, V (6sbh without GQA) and an
// fp32 log-sum-exp per query and head (4abs), so the attention keeps 11sbh + 4as (plus 2sbh for
// LayerNorm's input); without attention dropout the unfused attention keeps 2as^2b less
// (no mask, no dropout output) and PV reads the softmax output.
// Tensor parallelism divides the attention/MLP interiors by t; sequence parallelism divides the
// LayerNorm/dropout regions too. Grouped-query attention shrinks K and V, SwiGLU doubles the
// activation input.
#pragma once

#include <array>

#include "strategies/labels.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

using PerLayerOp = std::array<double, kLayerOpCount>;

// Bytes each forward kernel's saved tensors take when nothing is recomputed.
PerLayerOp stored_activations(const LayerDims& d);

struct LayerMemory {
    PerLayerOp forward{};    // allocated by the ordinary forward kernel
    PerLayerOp recompute{};  // allocated by its recomputation before the backward
    // Selective recomputation of latent attention's up-projections (mla_up_proj): the Q, K and V
    // the attention core keeps, written again before its backward and freed by it.
    double recomputed_qkv = 0.0;
    // Selective recomputation of the norms (layernorm), where they are modules of their own
    // (LayerDims::separate_norm1/2): LayerNorm 1's and 2's outputs, not kept from the forward, sit
    // in the recompute slot of the GEMM that reads them (QKV's, or latent attention's
    // projections'; FC1's, or the router's), allocated by the norm's recomputation at the start
    // of its block's backward and freed where the forward's copy was.
    double recomputed_norm1 = 0.0;
    double recomputed_norm2 = 0.0;
    // The mlp module moves FC1's, the activation's and FC2's stores of a dense layer to their
    // recompute slots, allocated by the MLP's forward run again at the start of its backward; the
    // moe module moves a mixture-of-experts layer's router probabilities there (FC1's slot), its
    // experts' stores following them.
};

// none: all in forward. selective: softmax output, dropout mask and output recomputed (the
// attention core), so sbh(10 + 24/t) stays. full: the forward keeps only the layer input
// (2sbh, /t with sequence parallelism); the recomputation allocates the rest.
LayerMemory layer_memory(const LayerDims& d, Recompute r);

inline double sum(const PerLayerOp& a) {
    double s = 0.0;
    for (double x : a) s += x;
    return s;
}

}  // namespace cuboid
