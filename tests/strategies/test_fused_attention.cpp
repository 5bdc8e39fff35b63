// Fused attention (model.attention: fused) against closed forms, and the framework presets'
// defaults.
#include <catch2/catch.hpp>

#include "strategies/activation_memory.hpp"
#include "strategies/framework.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/program_builder.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

ModelSpec llama_like() {
    ModelSpec m;
    m.layers = 2;
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.seq_len = 4096;
    m.vocab = 32000;
    m.attention = AttentionKernel::Fused;
    m.attention_dropout = false;
    return m;
}

}  // namespace

TEST_CASE("fused attention FLOPs: 4*b*a*s^2*d forward times the causal tile fraction, backward 2.5x") {
    const ModelSpec m = llama_like();
    const int t = 2, b = 3;
    const LayerDims d = LayerDims::make(m, b, t, false, sim::Precision::Bf16);
    const double a = 32.0 / t, s = 4096.0, hd = 128.0;
    const double n = s / 128.0;  // 128 x 128 tiles along the sequence
    const double causal = (n + 1.0) / (2.0 * n);
    CHECK(attention_tile_fraction(d) == Approx(causal));
    CHECK(fused_attention_flops(d, false) == Approx(4.0 * b * a * s * s * hd * causal));
    CHECK(fused_attention_flops(d, true) == Approx(2.5 * 4.0 * b * a * s * s * hd * causal));
    LayerDims full = d;
    full.causal = false;
    CHECK(fused_attention_flops(full, false) == Approx(4.0 * b * a * s * s * hd));
    // A sequence shorter than one tile: the single tile is computed whole.
    LayerDims short_seq = d;
    short_seq.s = 100;
    CHECK(attention_tile_fraction(short_seq) == Approx(1.0));
}

TEST_CASE("fused attention keeps Q, K, V and an fp32 log-sum-exp: no s x s tensor") {
    const ModelSpec m = llama_like();
    const int t = 4, b = 2;
    const LayerDims d = LayerDims::make(m, b, t, false, sim::Precision::Bf16);
    const PerLayerOp kept = stored_activations(d);
    const double bs = b * 4096.0, kv = 8 * 128.0;
    const double qkv = 2.0 * bs * (4096.0 + 2.0 * kv) / t;
    const double lse = 4.0 * b * (32.0 / t) * 4096.0;
    CHECK(kept[static_cast<std::size_t>(LayerOp::Attn)] == Approx(qkv + lse));
    for (LayerOp op : {LayerOp::Qk, LayerOp::Softmax, LayerOp::AttnDropout, LayerOp::Av})
        CHECK(kept[static_cast<std::size_t>(op)] == 0.0);
    // Unfused with dropout keeps 5*a*s^2*b bytes of scores (16-bit probabilities, mask, output).
    ModelSpec u = m;
    u.attention = AttentionKernel::Unfused;
    u.attention_dropout = true;
    const PerLayerOp unfused = stored_activations(LayerDims::make(u, b, t, false, sim::Precision::Bf16));
    const double scores = b * (32.0 / t) * 4096.0 * 4096.0;
    CHECK(unfused[static_cast<std::size_t>(LayerOp::Softmax)] + unfused[static_cast<std::size_t>(LayerOp::AttnDropout)] ==
          Approx(5.0 * scores));
    // Selective recomputation under fused attention recomputes only the statistics.
    const LayerMemory sel = layer_memory(d, Recompute::Selective);
    CHECK(sel.recompute[static_cast<std::size_t>(LayerOp::Attn)] == Approx(lse));
    CHECK(sel.forward[static_cast<std::size_t>(LayerOp::Attn)] == Approx(qkv));
}

TEST_CASE("a fused-attention program runs one kernel each way per layer and micro-batch, in 16 bit under fp8") {
    Scenario sc = cuboid::test::tiny_scenario(2, 1, 1, 4, 2);
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.training.precision = sim::Precision::Fp8;
    const sim::Program p = build_program(sc, validate_plan(sc));
    std::size_t forward = 0, backward = 0, batched = 0;
    for (const sim::OpList& list : p.op_lists)
        for (const sim::Op& op : list.ops) {
            forward += op.kind == sim::OpKind::FusedAttention;
            backward += op.kind == sim::OpKind::FusedAttentionBackward;
            batched += op.kind == sim::OpKind::BatchedGemm;
            if (sim::is_fused_attention(op.kind)) CHECK(op.precision == sim::Precision::Bf16);
        }
    const std::size_t per_list = 2 * 4;  // layers x micro-batches, one list per tensor rank kind
    CHECK(forward % per_list == 0);
    CHECK(forward > 0);
    CHECK(backward == forward);
    CHECK(batched == 0);
    for (const sim::OpList& list : p.op_lists)
        for (const sim::Op& op : list.ops)
            if (op.kind == sim::OpKind::Softmax) FAIL("an unfused softmax kernel in a fused-attention program");
}

TEST_CASE("framework presets: each sets its stack's defaults, and a key the scenario gives wins") {
    const FrameworkDefaults core = framework_defaults(Framework::MegatronCore);
    CHECK(core.attention == AttentionKernel::Fused);
    CHECK_FALSE(core.attention_dropout);
    CHECK_FALSE(core.hidden_dropout);
    CHECK(core.zero_stage == 1);
    CHECK(core.dp_overlap);
    CHECK(core.tp_backward_overlap);
    const FrameworkDefaults old = framework_defaults(Framework::Megatron2021);
    CHECK(old.attention == AttentionKernel::Unfused);
    CHECK(old.attention_dropout);
    CHECK(old.hidden_dropout);
    CHECK(old.zero_stage == 0);
    CHECK_FALSE(old.dp_overlap);
    CHECK_FALSE(old.tp_backward_overlap);

    Scenario s;
    s.stack.framework = Framework::Megatron2021;
    s.stack.dp_overlap = true;  // given by the scenario
    apply_framework(s);
    CHECK(s.model.attention == AttentionKernel::Unfused);
    CHECK(s.parallel.dp_overlap);
    CHECK_FALSE(s.parallel.tp_backward_overlap);
    s.stack.framework = Framework::MegatronCore;
    apply_framework(s);
    CHECK(s.model.attention == AttentionKernel::Fused);
    CHECK(s.parallel.zero_stage == 1);
    CHECK_FALSE(s.model.hidden_dropout);
    s.stack.hidden_dropout = true;  // given by the scenario
    apply_framework(s);
    CHECK(s.model.hidden_dropout);
}
