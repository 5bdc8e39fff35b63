#include "strategies/activation_memory.hpp"

#include "strategies/mla_layer.hpp"
#include "strategies/moe_layer.hpp"
#include "strategies/tensor_modes/mode_shapes.hpp"

namespace cuboid {

PerLayerOp stored_activations(const LayerDims& d) {
    if (d.mesh.own_program()) return mode_stored_activations(d);  // 2d, 3d, atp
    const double a = d.act_bytes;
    const double t = static_cast<double>(d.t);
    const double bsh = static_cast<double>(d.tokens() * d.h);
    const double sp = d.sp_div();
    const double scores = static_cast<double>(d.b * d.heads) * static_cast<double>(d.s * d.s) / t;
    const double bs = static_cast<double>(d.tokens());
    const double q = static_cast<double>(d.q_width());  // Q (h by default)
    const double o = static_cast<double>(d.o_width());  // the attention output (h by default)
    const double k = static_cast<double>(d.k_width()), v = static_cast<double>(d.v_width());
    constexpr double kMask = 1.0;  // dropout masks: one byte per element
    PerLayerOp m{};
    auto at = [&m](LayerOp op) -> double& { return m[static_cast<std::size_t>(op)]; };
    at(LayerOp::Ln1) = a * bsh / sp;
    at(LayerOp::Qkv) = a * bsh / sp;
    at(LayerOp::Qk) = a * bs * (q + k) / t;
    at(LayerOp::Softmax) = a * scores;
    at(LayerOp::AttnDropout) = (kMask + a) * scores;
    at(LayerOp::Av) = a * bs * v / t;
    at(LayerOp::Proj) = a * bs * o / t;
    const double mask = d.hidden_dropout ? kMask : 0.0;  // no hidden dropout: a plain residual add
    at(LayerOp::Bda1) = mask * bsh / sp;
    at(LayerOp::Ln2) = a * bsh / sp;
    at(LayerOp::Fc1) = a * bsh / sp;
    at(LayerOp::Act) = a * bs * static_cast<double>(d.fc1_width()) / t;
    at(LayerOp::Fc2) = a * bs * static_cast<double>(d.ffn) / t;
    at(LayerOp::Bda2) = mask * bsh / sp;
    if (!d.attn_dropout) at(LayerOp::AttnDropout) = 0.0;  // PV reads the softmax output itself
    if (d.fused_attention) {
        // One kernel keeps Q, K, V (its output is the projection's input, kept there) and the
        // row statistics: nothing of size s x s.
        for (LayerOp op : {LayerOp::Qk, LayerOp::Softmax, LayerOp::AttnDropout, LayerOp::Av}) at(op) = 0.0;
        at(LayerOp::Attn) = a * bs * (q + k + v) / t + fused_attention_stats_bytes(d);
    }
    if (d.te_kernels && d.fp8) {
        // Transformer Engine keeps the fp8 copy of a linear layer's input for its weight gradient,
        // one byte per element: LayerNorm's outputs and the activation's output are written in
        // fp8 only; the projection's input is also the attention output, kept in 16 bits for the
        // attention backward, so its fp8 copy comes on top. MXFP8 keeps a scale byte per 32
        // elements beside each copy.
        const double kFp8 = d.fp8_recipe == Fp8Recipe::Mxfp8 ? 1.0 + 1.0 / 32.0 : 1.0;
        at(LayerOp::Qkv) = kFp8 * bsh / sp;
        at(LayerOp::Fc1) = kFp8 * bsh / sp;
        at(LayerOp::Fc2) = kFp8 * bs * static_cast<double>(d.ffn) / t;
        at(LayerOp::Proj) += kFp8 * bs * o / t;
    }
    // Latent attention's projections keep their inputs in 16 bits (their fp8 copies are not
    // modelled, mla_layer.hpp) in the slot of QKV's.
    if (d.mla) at(LayerOp::Qkv) = mla_stored_bytes(d);
    if (d.moe) {
        // A mixture-of-experts MLP (strategies/moe_layer.hpp) keeps its input, LayerNorm 2's
        // output (router and shared experts' FC1 input, 16-bit: the expert GEMMs' fp8 casts are
        // not modelled), here with the router's fp32 probabilities; its kernels allocate the rest
        // themselves (moe_activations), since the dispatched rows follow the routing, not bsh.
        at(LayerOp::Fc1) = a * bsh / sp + router_probability_bytes(d);
        at(LayerOp::Act) = 0.0;
        at(LayerOp::Fc2) = 0.0;
    }
    return m;
}

LayerMemory layer_memory(const LayerDims& d, Recompute r) {
    const PerLayerOp all = stored_activations(d);
    LayerMemory mem;
    mem.forward = all;
    const auto move_to_recompute = [&mem](LayerOp op) {
        const auto i = static_cast<std::size_t>(op);
        mem.recompute[i] = mem.forward[i];
        mem.forward[i] = 0.0;
    };
    const auto attn = static_cast<std::size_t>(LayerOp::Attn);
    if (r == Recompute::Selective && d.mla && d.recompute_mla_up) {
        // Megatron-Core's mla_up_proj: the up-projections' output (Q, K and V, rotated) is
        // discarded once the attention core has read it and written again from the kept latents
        // before the core's backward, which reads it.
        mem.recomputed_qkv = d.act_bytes * static_cast<double>(d.tokens()) *
                             static_cast<double>(d.q_width() + d.k_width() + d.v_width()) / static_cast<double>(d.t);
        mem.forward[attn] -= mem.recomputed_qkv;
    }
    if (r == Recompute::Selective && d.recompute_layernorm) {
        // Megatron-Core's layernorm module (output-discarding checkpoints of input_layernorm and
        // pre_mlp_layernorm): each separate norm's output, 16-bit over the rank's rows, is what
        // the GEMM after it keeps as its input (with the router's probabilities beside it in a
        // mixture-of-experts layer, and the latents beside it in latent attention's slot).
        const double norm_output = d.act_bytes * static_cast<double>(d.tokens() * d.h) / d.sp_div();
        const auto move = [&mem](LayerOp op, double bytes) {
            const auto i = static_cast<std::size_t>(op);
            mem.forward[i] -= bytes;
            mem.recompute[i] += bytes;
            return bytes;
        };
        if (d.separate_norm1()) mem.recomputed_norm1 = move(LayerOp::Qkv, norm_output);
        if (d.separate_norm2()) mem.recomputed_norm2 = move(LayerOp::Fc1, norm_output);
    }
    if (r == Recompute::Selective && d.mlp_checkpointed()) {
        // Megatron-Core's mlp module: tensor_parallel.checkpoint of the dense MLP keeps its input
        // and nothing inside. With the norm fused into FC1 (Transformer Engine; pre_mlp_layernorm
        // is IdentityOp) that input is the norm's input, kept anyway for the norm's backward, so
        // FC1's saved input (the norm's output, or its fp8 copy), FC1's output and the activation's
        // output all go, written again by the MLP's forward run at the start of its backward.
        for (LayerOp op : {LayerOp::Fc1, LayerOp::Act, LayerOp::Fc2}) move_to_recompute(op);
    }
    if (r == Recompute::Selective && d.moe_checkpointed()) {
        // Megatron-Core's moe module: tensor_parallel.checkpoint of the MoE layer keeps its input,
        // the norm's output, and nothing inside: the router's probabilities leave FC1's slot (what
        // the experts and the shared experts keep follows the slot, moe_layer.cpp), written again
        // with the rest by the layer's forward run at the start of its backward.
        const auto fc1 = static_cast<std::size_t>(LayerOp::Fc1);
        const double probabilities = router_probability_bytes(d);
        mem.forward[fc1] -= probabilities;
        mem.recompute[fc1] += probabilities;
    }
    const bool core = r == Recompute::Selective && d.recompute_core_attention;  // core_attn among the modules
    if (core && d.fused_attention) {
        // Megatron-Core checkpoints the core attention: Q, K and V stay as the checkpoint's inputs,
        // the kernel runs again before the backward and keeps its statistics then.
        mem.recompute[attn] = fused_attention_stats_bytes(d);
        mem.forward[attn] -= mem.recompute[attn];
    } else if (core) {
        move_to_recompute(LayerOp::Softmax);
        move_to_recompute(LayerOp::AttnDropout);
    } else if (r == Recompute::Full) {
        // LayerNorm 1's input is the layer input: the one tensor full recompute keeps.
        for (int i = 1; i < kLayerOpCount; ++i) move_to_recompute(static_cast<LayerOp>(i));
    }
    return mem;
}

}  // namespace cuboid
