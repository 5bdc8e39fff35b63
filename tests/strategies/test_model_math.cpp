// FLOP and parameter counts, and the preset data.
#include <catch2/catch.hpp>

#include "strategies/model_math.hpp"
#include "strategies/model_presets.hpp"

using namespace cuboid;

namespace {
ModelSpec preset(const std::string& name) {
    ModelSpec m;
    apply_preset(name, m);
    return m;
}
}  // namespace

TEST_CASE("model FLOPs from the GEMMs equal Megatron's closed form for every GPT preset") {
    // 3 x (24 b s h^2 + 4 b s^2 h) per layer + 3 x 2 b s h V for the logits
    //   = 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Narayanan et al. SC'21).
    for (const auto& p : model_presets()) {
        if (p.spec.swiglu) continue;
        INFO(p.name);
        for (int batch : {1, 512, 1536}) {
            CHECK(model_flops_per_iteration(p.spec, batch) ==
                  Approx(megatron_model_flops(p.spec, batch)).epsilon(1e-12));
        }
    }
}

TEST_CASE("layer forward FLOPs for grouped-query attention and SwiGLU follow the GEMM shapes") {
    const ModelSpec m = preset("llama2-70b");
    const double s = m.seq_len, h = m.hidden, kv = m.kv_heads, a = m.heads, f = m.ffn_hidden;
    // QKV [s,h]x[h, h + 2 kv h/a], attention 2 x 2 s^2 h, projection 2 s h^2,
    // gate+up [s,h]x[h,2f], down [s,f]x[f,h].
    const double qkv = 2.0 * s * h * (h + 2.0 * kv * h / a);
    const double expected = qkv + 4.0 * s * s * h + 2.0 * s * h * h + 2.0 * s * h * 2.0 * f + 2.0 * s * f * h;
    CHECK(layer_forward_flops(m, 1) == Approx(expected).epsilon(1e-12));
    // Per iteration: 3 x (layers x layer + logits 2 s h V) x B.
    const double per_seq = m.layers * expected + 2.0 * s * h * m.vocab;
    CHECK(model_flops_per_iteration(m, 8) == Approx(3.0 * 8 * per_seq).epsilon(1e-12));
}

TEST_CASE("recompute FLOPs: full repeats every layer forward, selective the attention core") {
    const ModelSpec m = preset("gpt-1t");
    const double B = 3072, s = m.seq_len, l = m.layers, h = m.hidden;
    // Full: + 24 B s l h^2 + 4 B s^2 l h, i.e. model + full = 96 B s l h^2 (1 + s/6h + V/16lh).
    const double with_full = model_flops_per_iteration(m, 3072) + recompute_flops_per_iteration(m, 3072, Recompute::Full);
    CHECK(with_full == Approx(96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + m.vocab / (16.0 * l * h))).epsilon(1e-12));
    // Selective: + 4 B s^2 h l (seed_algorithms §5.2).
    CHECK(recompute_flops_per_iteration(m, 3072, Recompute::Selective) == Approx(4.0 * B * s * s * h * l).epsilon(1e-12));
    CHECK(recompute_flops_per_iteration(m, 3072, Recompute::None) == 0.0);
}

TEST_CASE("parameter counts match the published model sizes") {
    // GPT: 12 l h^2 + 13 l h + (V + s) h + 2h = 174.6e9 for GPT-3 (l 96, h 12288, V 50257).
    const ModelSpec g = preset("gpt3-175b");
    const double l = g.layers, h = g.hidden;
    CHECK(parameter_count(g) == Approx(12 * l * h * h + 13 * l * h + (g.vocab + g.seq_len) * h + 2 * h));
    CHECK(parameter_count(g) == Approx(175e9).epsilon(0.01));
    // Megatron's table names each row by its size: within 3% (the table rounds the vocabulary).
    for (const std::string name : {"gpt-1.7b", "gpt-39.1b", "gpt-145.6b", "gpt-1008b"}) {
        const double billions = std::stod(name.substr(4));
        INFO(name);
        CHECK(parameter_count(preset(name)) == Approx(billions * 1e9).epsilon(0.03));
    }
    // Llama 2 7B: 32 x (4 h^2 + 3 h f + 2h) + 2 V h + h = 6.74e9 (Touvron et al. 2023).
    CHECK(parameter_count(preset("llama2-7b")) == Approx(6.74e9).epsilon(0.005));
    CHECK(parameter_count(preset("llama3-405b")) == Approx(405e9).epsilon(0.01));
}

TEST_CASE("tensor-parallel ranks hold 1/t of the split matrices") {
    const ModelSpec m = preset("gpt-39b");
    const double h = m.hidden;
    // Replicated per rank: two LayerNorms (4h) and the row-parallel biases (2h).
    CHECK(layer_parameter_count_per_rank(m, 8) * 8 - 7 * 6 * h == Approx(layer_parameter_count(m)));
}

TEST_CASE("presets: every Megatron row, aliases, and unknown names") {
    const auto presets = model_presets();
    for (const std::string name : {"gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "gpt-18.4b", "gpt-39.1b", "gpt-76.1b",
                                   "gpt-145.6b", "gpt-310.1b", "gpt-529.6b", "gpt-1008b", "gpt3-175b", "llama2-7b",
                                   "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b"}) {
        INFO(name);
        CHECK_NOTHROW(preset(name));
    }
    CHECK(preset("gpt-1t").layers == preset("gpt-1008b").layers);
    CHECK(preset("gpt-39b").hidden == 8192);
    CHECK(preset("llama3-8b").kv_heads_or_default() == 8);
    for (const auto& p : presets) {
        INFO(p.name);
        CHECK(!p.source.empty());
        CHECK(!p.description.empty());
    }
    ModelSpec m;
    try {
        apply_preset("gpt-2", m, InputLocation{"s.yaml", 3, "model.preset"});
        FAIL("unknown preset accepted");
    } catch (const InputError& e) {
        const std::string what = e.what();
        CHECK(what.find("s.yaml:3") != std::string::npos);
        CHECK(what.find("model.preset") != std::string::npos);
        CHECK(what.find("llama3-405b") != std::string::npos);  // lists what is allowed
    }
}
