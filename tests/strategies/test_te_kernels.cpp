// Transformer Engine's passes around the GEMMs (training.transformer_engine) and the passes of
// the optimizer step, against closed forms of their bytes and against the switches that gate them.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/gpu_spec.hpp"
#include "strategies/activation_memory.hpp"
#include "strategies/framework.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr int kLayers = 2, kMicro = 4;

// t-way tensor parallelism, one stage, one replica; Llama-like shapes with grouped-query attention.
Scenario te_scenario(int t, bool te, sim::Precision precision, bool swiglu) {
    Scenario sc = cuboid::test::te_fp8_scenario(t, kMicro, kLayers);
    sc.model.hidden = 256;
    sc.model.heads = 8;
    sc.model.kv_heads = 2;
    sc.model.ffn_hidden = 512;
    sc.model.seq_len = 128;
    sc.model.swiglu = swiglu;
    sc.model.transformer_engine = te;
    sc.training.precision = precision;
    return sc;
}

// Bytes and count per label on rank 0's op list.
struct LabelTotals {
    std::map<std::string, double> bytes;
    std::map<std::string, int> count;
};

LabelTotals totals(const Scenario& sc) {
    const sim::Program p = build_program(sc, validate_plan(sc));
    LabelTotals t;
    for (const sim::Op& op : p.op_lists[0].ops) {
        const std::string& name = p.labels[op.label];
        t.bytes[name] += op.bytes.value;
        t.count[name] += 1;
    }
    return t;
}

}  // namespace

TEST_CASE("TE fp8: each cast and transpose has its closed-form bytes, once per layer and micro-batch") {
    for (int t : {1, 2}) {
        const Scenario sc = te_scenario(t, true, sim::Precision::Fp8, true);
        LabelTotals got = totals(sc);
        const double bs = static_cast<double>(sc.training.micro_batch) * sc.model.seq_len;
        const double h = sc.model.hidden, ffn = sc.model.ffn_hidden, hd = h / sc.model.heads;
        const double qkv = (sc.model.heads + 2.0 * sc.model.kv_heads) * hd;
        const double a = 2.0, n = kLayers * kMicro;
        INFO("t = " << t);
        // Input casts with transpose: read 16 bits, write fp8 twice.
        CHECK(got.bytes["F.proj.cast"] == Approx(n * (a + 2.0) * bs * h / t));
        // Output gradients (forward output [bs, n] of the GEMM on this rank).
        CHECK(got.bytes["B.qkv.cast"] == Approx(n * (a + 2.0) * bs * qkv / t));
        CHECK(got.bytes["B.proj.cast"] == Approx(n * (a + 2.0) * bs * h));
        CHECK(got.bytes["B.fc2.cast"] == Approx(n * (a + 2.0) * bs * h));
        CHECK(got.count.count("B.fc1.cast") == 0);  // fused into the activation's backward
        // Saved fp8 inputs transposed for the weight gradients: read and write one byte each.
        CHECK(got.bytes["B.qkv.transpose"] == Approx(n * 2.0 * bs * h));
        CHECK(got.bytes["B.fc1.transpose"] == Approx(n * 2.0 * bs * h));
        CHECK(got.bytes["B.fc2.transpose"] == Approx(n * 2.0 * bs * ffn / t));
        CHECK(got.count.count("B.proj.transpose") == 0);  // transposed by its forward cast
        // The rotary embedding reads and writes Q and K of this rank, each way.
        const double rope = n * 2.0 * a * bs * (sc.model.heads + sc.model.kv_heads) * hd / t;
        CHECK(got.bytes["F.rope"] == Approx(rope));
        CHECK(got.bytes["B.rope"] == Approx(rope));
        CHECK(got.count["F.proj.cast"] == n);
    }
}

TEST_CASE("fp8 recipes: current scaling adds the amax pass and the producers' casts, MXFP8 writes both orientations with their scales") {
    for (int t : {1, 2}) {
        for (bool sp : {false, true}) {
            if (sp && t == 1) continue;
            Scenario sc = te_scenario(t, true, sim::Precision::Fp8, true);
            sc.parallel.sequence_parallel = sp;
            const double bs = static_cast<double>(sc.training.micro_batch) * sc.model.seq_len;
            const double h = sc.model.hidden, ffn = sc.model.ffn_hidden, hd = h / sc.model.heads;
            const double qkv = (sc.model.heads + 2.0 * sc.model.kv_heads) * hd;
            const double a = 2.0, n = kLayers * kMicro, region = sp ? bs * h / t : bs * h;
            INFO("t = " << t << ", sequence parallel " << sp);

            sc.model.fp8_recipe = Fp8Recipe::Current;
            LabelTotals cur = totals(sc);
            // An amax pass (read 16 bits) before each standalone cast.
            CHECK(cur.bytes["F.proj.cast"] == Approx(n * (2.0 * a + 2.0) * bs * h / t));
            CHECK(cur.bytes["B.qkv.cast"] == Approx(n * (2.0 * a + 2.0) * bs * qkv / t));
            CHECK(cur.bytes["B.fc2.cast"] == Approx(n * (2.0 * a + 2.0) * bs * h));
            // LayerNorm's and the activation's 16-bit outputs cast row-wise (before the gather);
            // the activation's backward output with its transpose.
            CHECK(cur.bytes["F.qkv.cast"] == Approx(n * (a + 1.0) * region));
            CHECK(cur.bytes["F.fc1.cast"] == Approx(n * (a + 1.0) * region));
            CHECK(cur.bytes["F.fc2.cast"] == Approx(n * (a + 1.0) * bs * ffn / t));
            CHECK(cur.bytes["B.fc1.cast"] == Approx(n * (a + 2.0) * bs * 2.0 * ffn / t));
            CHECK(cur.bytes["B.qkv.transpose"] == Approx(n * 2.0 * bs * h));  // as under delayed

            sc.model.fp8_recipe = Fp8Recipe::Mxfp8;
            LabelTotals mx = totals(sc);
            const double both = 2.0 * (1.0 + 1.0 / 32.0);  // two orientations, a scale byte per 32
            CHECK(mx.bytes["F.proj.cast"] == Approx(n * (a + both) * bs * h / t));
            CHECK(mx.bytes["B.proj.cast"] == Approx(n * (a + both) * bs * h));
            // LayerNorm's output gathered in 16 bits, then cast whole; the activations quantize
            // themselves; no transposes (the column-wise copies come from the casts).
            CHECK(mx.bytes["F.qkv.cast"] == Approx(n * (a + both) * bs * h));
            CHECK(mx.bytes["F.fc1.cast"] == Approx(n * (a + both) * bs * h));
            CHECK(mx.count.count("F.fc2.cast") == 0);
            CHECK(mx.count.count("B.fc1.cast") == 0);
            for (const std::string l : {"B.qkv.transpose", "B.fc1.transpose", "B.fc2.transpose"}) CHECK(mx.count.count(l) == 0);
            // Saved fp8 inputs carry their scales.
            LayerDims d = LayerDims::make(sc.model, sc.training.micro_batch, t, sp, sim::Precision::Fp8);
            const PerLayerOp with_scales = stored_activations(d);
            d.fp8_recipe = Fp8Recipe::Delayed;
            const PerLayerOp per_tensor = stored_activations(d);
            const auto fc1 = static_cast<std::size_t>(LayerOp::Fc1);
            CHECK(with_scales[fc1] == Approx(per_tensor[fc1] * (1.0 + 1.0 / 32.0)));
        }
    }
}

TEST_CASE("fp8 recipes: delayed scaling is the default and the program of a scenario without the key") {
    Scenario sc = te_scenario(2, true, sim::Precision::Fp8, true);
    CHECK(sc.model.fp8_recipe == Fp8Recipe::Delayed);
    const LabelTotals implicit = totals(sc);
    CHECK(implicit.count.count("F.qkv.cast") == 0);
    CHECK(implicit.count.count("B.fc1.cast") == 0);
}

TEST_CASE("fp8 recipes are refused where they mean nothing: without fp8, without TE, with 2d tensor parallelism") {
    Scenario sc = te_scenario(2, true, sim::Precision::Bf16, true);
    sc.model.fp8_recipe = Fp8Recipe::Current;
    CHECK_THROWS_WITH(validate_plan(sc), Catch::Contains("needs training.precision: fp8"));
    sc.training.precision = sim::Precision::Fp8;
    sc.model.transformer_engine = false;
    CHECK_THROWS_WITH(validate_plan(sc), Catch::Contains("needs training.transformer_engine: true"));
    sc.model.transformer_engine = true;
    CHECK_NOTHROW(validate_plan(sc));
}

TEST_CASE("TE passes are gated: casts only under fp8, RoPE only for rotary models, none without TE") {
    const auto has = [](const LabelTotals& t, const std::string& l) { return t.count.count(l) > 0; };
    const LabelTotals bf16 = totals(te_scenario(2, true, sim::Precision::Bf16, true));
    CHECK_FALSE(has(bf16, "B.qkv.cast"));
    CHECK(has(bf16, "F.rope"));
    const LabelTotals gpt = totals(te_scenario(2, true, sim::Precision::Fp8, false));
    CHECK(has(gpt, "B.qkv.cast"));
    CHECK_FALSE(has(gpt, "F.rope"));
    const LabelTotals off = totals(te_scenario(2, false, sim::Precision::Fp8, true));
    for (const std::string l : {"F.proj.cast", "B.qkv.cast", "B.fc2.transpose", "F.rope", "B.rope"})
        CHECK_FALSE(has(off, l));
}

TEST_CASE("full recompute repeats the forward cast and RoPE; selective recompute neither") {
    Scenario sc = te_scenario(2, true, sim::Precision::Fp8, true);
    sc.parallel.recompute = Recompute::Full;
    LabelTotals full = totals(sc);
    CHECK(full.count["R.proj.cast"] == kLayers * kMicro);
    CHECK(full.count["R.rope"] == kLayers * kMicro);
    sc.parallel.recompute = Recompute::Selective;
    LabelTotals selective = totals(sc);
    CHECK(selective.count.count("R.proj.cast") == 0);
    CHECK(selective.count.count("R.rope") == 0);
}

TEST_CASE("optimizer step passes: gradient norm over the shard, zeroing of the whole buffer, unscale under fp16") {
    for (int zero : {0, 1}) {
        for (sim::Precision p : {sim::Precision::Bf16, sim::Precision::Fp16}) {
            Scenario sc = cuboid::test::tiny_scenario(1, 1, 2, kMicro, kLayers);
            sc.parallel.zero_stage = zero;
            sc.training.precision = p;
            const sim::Program prog = build_program(sc, validate_plan(sc));
            double optimizer = 0.0, norm = 0.0, zeroing = 0.0, unscale = 0.0;
            for (const sim::Op& op : prog.op_lists[0].ops) {
                const std::string& l = prog.labels[op.label];
                if (l == "optimizer") optimizer = op.bytes.value;
                if (l == "optimizer.grad_norm") norm = op.bytes.value;
                if (l == "optimizer.zero_grad") zeroing = op.bytes.value;
                if (l == "optimizer.unscale") unscale = op.bytes.value;
            }
            const StateBytesPerParam s = state_bytes_per_param(p);
            const double shard = optimizer / optimizer_step_bytes_per_param(p);  // parameters Adam updates
            INFO("zero " << zero << " precision " << static_cast<int>(p));
            CHECK(norm == Approx(shard * s.grad));
            CHECK(zeroing == Approx(shard * (zero >= 1 ? 2.0 : 1.0) * s.grad));  // d = 2 replicas
            CHECK(unscale == Approx(p == sim::Precision::Fp16 ? 2.0 * shard * s.grad : 0.0));
        }
    }
}

TEST_CASE("framework presets set training.transformer_engine; the scenario's key wins") {
    CHECK(framework_defaults(Framework::MegatronCore).transformer_engine);
    CHECK_FALSE(framework_defaults(Framework::Megatron2021).transformer_engine);
    Scenario s;
    s.stack.framework = Framework::MegatronCore;
    apply_framework(s);
    CHECK(s.model.transformer_engine);
    s.stack.transformer_engine = false;
    apply_framework(s);
    CHECK_FALSE(s.model.transformer_engine);
}

TEST_CASE("TE fp8 keeps a linear layer's saved input in fp8; the projection's fp8 copy comes beside the attention output") {
    Scenario sc = te_scenario(2, true, sim::Precision::Fp8, true);
    sc.parallel.sequence_parallel = true;
    LayerDims d = LayerDims::make(sc.model, 2, 2, true, sim::Precision::Fp8);
    const PerLayerOp te = stored_activations(d);
    d.te_kernels = false;
    const PerLayerOp plain = stored_activations(d);
    const auto at = [](const PerLayerOp& m, LayerOp op) { return m[static_cast<std::size_t>(op)]; };
    const double bsh = static_cast<double>(d.tokens() * d.h), t = 2.0;
    CHECK(at(te, LayerOp::Qkv) == Approx(at(plain, LayerOp::Qkv) / 2.0));  // 1 byte instead of 2
    CHECK(at(te, LayerOp::Fc1) == Approx(at(plain, LayerOp::Fc1) / 2.0));
    CHECK(at(te, LayerOp::Fc2) == Approx(at(plain, LayerOp::Fc2) / 2.0));
    CHECK(at(te, LayerOp::Proj) == Approx(at(plain, LayerOp::Proj) + bsh / t));
    for (LayerOp op : {LayerOp::Ln1, LayerOp::Ln2, LayerOp::Act, LayerOp::Attn, LayerOp::Bda1, LayerOp::Bda2})
        CHECK(at(te, op) == at(plain, op));
}

TEST_CASE("mxfp8 needs block-scaled fp8 tensor cores: Blackwell and CDNA4, not Hopper") {
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    Scenario sc = te_scenario(2, true, sim::Precision::Fp8, true);
    sc.model.fp8_recipe = Fp8Recipe::Mxfp8;
    CHECK_THROWS_WITH(check_gpu_features(sc, catalog.gpu("h100-sxm-80gb")), Catch::Contains("h100-sxm-80gb is hopper"));
    CHECK_NOTHROW(check_gpu_features(sc, catalog.gpu("b200-sxm-180gb")));
    CHECK_NOTHROW(check_gpu_features(sc, catalog.gpu("mi355x-288gb")));
    sc.model.fp8_recipe = Fp8Recipe::Current;
    CHECK_NOTHROW(check_gpu_features(sc, catalog.gpu("h100-sxm-80gb")));
}
