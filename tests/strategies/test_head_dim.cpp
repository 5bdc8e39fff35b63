// model.head_dim: attention heads of their own size (Qwen3: 32 heads of 128 on hidden 2048).
// Q and the attention output are heads x head_dim wide, K and V kv_heads x head_dim; the residual
// stream stays hidden. The GEMM shapes, weights, activations and plan checks follow.
#include <catch2/catch.hpp>

#include "hardware_models/errors.hpp"
#include "strategies/activation_memory.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/layout.hpp"
#include "strategies/model_math.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// The tiny model (hidden 64, 4 heads) with 2 key/value heads, gated MLP, fused attention.
Scenario wide_heads(int t, int head_dim) {
    Scenario sc = test::te_fp8_scenario(t, 4, 2);
    sc.training.precision = sim::Precision::Bf16;
    sc.model.kv_heads = 2;
    sc.model.head_dim = head_dim;
    return sc;
}

LayerDims dims_of(const Scenario& sc) {
    return LayerDims::make(sc.model, sc.training.micro_batch, sc.parallel.tensor, false, sc.training.precision);
}

}  // namespace

TEST_CASE("head_dim: the QKV, attention and projection GEMMs are heads x head_dim wide") {
    const LayerGemms g = layer_gemms(dims_of(wide_heads(2, 32)));  // Q 4 x 32 = 128, K and V 2 x 32 = 64
    CHECK(g.qkv.n == (128 + 2 * 64) / 2);
    CHECK(g.qkv.k == 64);  // the residual stream
    CHECK(g.qk.k == 32);
    CHECK(g.av.n == 32);
    CHECK(g.proj.k == 128 / 2);
    CHECK(g.proj.n == 64);
    CHECK(g.fc1.k == 64);
}

TEST_CASE("head_dim: weights and stored activations grow by the wider Q, K, V and projection") {
    const Scenario narrow = wide_heads(1, 0), wide = wide_heads(1, 32);
    // Gated MLP, no biases: QKV h x (q + 2 kv), projection q x h; q 64 -> 128, kv 32 -> 64.
    CHECK(layer_parameter_count(wide.model) - layer_parameter_count(narrow.model) ==
          64.0 * (128 - 64) + 64.0 * 2 * (64 - 32) + (128 - 64) * 64.0);
    // Fused attention keeps Q, K, V (16-bit) for its backward, the projection its input (the
    // attention output, q wide): 32 tokens of each.
    const PerLayerOp a = stored_activations(dims_of(narrow)), b = stored_activations(dims_of(wide));
    const auto at = [](const PerLayerOp& m, LayerOp op) { return m[static_cast<std::size_t>(op)]; };
    CHECK(at(b, LayerOp::Attn) - at(a, LayerOp::Attn) == 2.0 * 32 * ((128 - 64) + 2 * (64 - 32)));
    CHECK(at(b, LayerOp::Proj) - at(a, LayerOp::Proj) == 2.0 * 32 * (128 - 64));
    CHECK(at(b, LayerOp::Fc1) == at(a, LayerOp::Fc1));
}

TEST_CASE("head_dim: hidden / heads changes nothing; wider heads cost time") {
    const RunResult base = run_scenario(wide_heads(2, 0));
    const RunResult same = run_scenario(wide_heads(2, 16));  // 64 / 4
    CHECK(same.fingerprint == base.fingerprint);
    CHECK(same.iteration_time_s == base.iteration_time_s);
    const RunResult wide = run_scenario(wide_heads(2, 32));
    CHECK(wide.iteration_time_s > base.iteration_time_s);
    CHECK(wide.peak_memory_bytes > base.peak_memory_bytes);
}

TEST_CASE("head_dim: checked at its key") {
    // Given, the hidden size need not be a multiple of the heads.
    Scenario odd = wide_heads(1, 32);
    odd.model.hidden = 66;
    CHECK_NOTHROW(validate_plan(odd));
    odd.model.head_dim = 0;
    CHECK_THROWS_AS(validate_plan(odd), InputError);
    // The 2d, 3d and ATP programs split the attention as the hidden size.
    Scenario two_d = test::tiny_scenario(4, 1, 1, 4);
    two_d.model.head_dim = 32;
    two_d.model.attention = AttentionKernel::Unfused;
    two_d.parallel.tensor_mode = TensorMode::TwoD;
    two_d.training.micro_batch = 2;
    two_d.training.global_batch = 8;
    try {
        validate_plan(two_d);
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(e.where().key == "model.head_dim");
        CHECK_THAT(e.what(), Catch::Contains("only 1d tensor parallelism"));
    }
    two_d.model.head_dim = 16;  // = 64 / 4: the 2d program's own shape
    CHECK_NOTHROW(validate_plan(two_d));
}
