// Multi-head latent attention (model.attention_kind: mla, strategies/mla_layer.hpp) against
// closed forms: DeepSeek-V3's parameter count from its report, the GEMM shapes of the down- and
// up-projections under tensor and sequence parallelism, the FLOPs and bytes of the program's
// ops, the latents' tensor-parallel collectives, the stored activations, memory conservation
// under every schedule, and the plan checks at their keys.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "hardware_models/errors.hpp"
#include "strategies/activation_memory.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/mla_layer.hpp"
#include "strategies/model_math.hpp"
#include "strategies/model_presets.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;
using test::at;
using test::label_totals;
using test::LabelTotals;

namespace {

constexpr int kQLora = 32, kKvLora = 16, kNope = 8, kRope = 4, kV = 8;

// The tiny model (hidden 64, 4 heads, sequence 32) with DeepSeek's layer: latent attention,
// gated MLP, fused attention; t x p x d GPUs, sequence parallel when t > 1.
Scenario mla_plan(int t, int p, int d) {
    Scenario sc = test::tiny_scenario(t, p, d, 4, 4);
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.attention_kind = AttentionKind::Mla;
    sc.model.q_lora_rank = kQLora;
    sc.model.kv_lora_rank = kKvLora;
    sc.model.qk_nope_head_dim = kNope;
    sc.model.qk_rope_head_dim = kRope;
    sc.model.v_head_dim = kV;
    sc.parallel.sequence_parallel = t > 1;
    return sc;
}

LayerDims dims_of(const Scenario& sc) {
    return LayerDims::make(sc.model, sc.training.micro_batch, sc.parallel.tensor, sc.parallel.sequence_parallel,
                           sc.training.precision);
}


}  // namespace

TEST_CASE("mla: DeepSeek-V3 has the 671B parameters and 37B active per token its report states") {
    ModelSpec m;
    apply_preset("deepseek-v3", m);
    REQUIRE(m.mla());
    // DeepSeek-V3 Technical Report (2024), abstract: 671B total parameters, 37B activated for each
    // token (the main model; its multi-token prediction module, 14B, is not in the preset).
    const double total = parameter_count(m);
    CHECK(total == Approx(671e9).epsilon(0.005));
    // Active: all but the routed experts a token does not visit, in each of the 58 expert layers.
    const double expert = 3.0 * m.hidden * m.expert_ffn_hidden;  // gate, up, down
    const double active = total - m.moe_layers() * (m.experts - m.top_k()) * expert;
    CHECK(active == Approx(37e9).epsilon(0.03));
}

TEST_CASE("mla: the down-projections run on a rank's own rows, the up-projections split the heads") {
    const LayerGemms g = layer_gemms(dims_of(mla_plan(2, 1, 1)));  // 32 tokens, t 2, sequence parallel
    CHECK(g.qkv.n == 0);                                            // no QKV GEMM
    CHECK((g.q_down.m == 16 && g.q_down.n == kQLora && g.q_down.k == 64));
    CHECK((g.kv_down.m == 16 && g.kv_down.n == kKvLora + kRope && g.kv_down.k == 64));
    CHECK((g.q_up.m == 32 && g.q_up.n == 2 * (kNope + kRope) && g.q_up.k == kQLora));
    CHECK((g.kv_up.m == 32 && g.kv_up.n == 2 * (kNope + kV) && g.kv_up.k == kKvLora));
    CHECK((g.qk.k == kNope + kRope && g.qk.batch == 2));  // queries and keys of nope + rope
    CHECK(g.av.n == kV);
    CHECK((g.proj.k == 2 * kV && g.proj.n == 64));
    // Without sequence parallelism every rank projects every row (the weights are whole).
    Scenario no_sp = mla_plan(2, 1, 1);
    no_sp.parallel.sequence_parallel = false;
    CHECK(layer_gemms(dims_of(no_sp)).q_down.m == 32);
}

TEST_CASE("mla: weights, FLOPs and collectives of the program against closed forms") {
    const Scenario sc = mla_plan(2, 1, 1);
    const LayerDims d = dims_of(sc);
    const double h = 64, heads = 4, tokens = 32, a = 2.0, layers = 4, micro = 4;
    // Whole on every rank: the down-projections and the latents' RMSNorm scales; split by heads:
    // the up-projections and the output projection.
    const LatentAttentionParameters p = mla_parameters(d);
    CHECK(p.whole == h * kQLora + h * (kKvLora + kRope) + kQLora + kKvLora);
    CHECK(p.split == kQLora * heads * (kNope + kRope) + kKvLora * heads * (kNope + kV) + heads * kV * h);
    const double ffn = 4 * h, mlp = 3 * h * ffn;
    CHECK(layer_parameter_count_per_rank(sc.model, 2) == (p.split + mlp) / 2 + p.whole + 2 * h);

    const LabelTotals f = label_totals(build_program(sc, validate_plan(sc)), 0);
    const double n = layers * micro;  // layer forwards of one rank
    CHECK(at(f.flops, "F.mla.q_down") == n * 2 * (tokens / 2) * h * kQLora);
    CHECK(at(f.flops, "F.mla.kv_down") == n * 2 * (tokens / 2) * h * (kKvLora + kRope));
    CHECK(at(f.flops, "F.mla.q_up") == n * 2 * tokens * kQLora * 2 * (kNope + kRope));
    CHECK(at(f.flops, "F.mla.kv_up") == n * 2 * tokens * kKvLora * 2 * (kNope + kV));
    CHECK(at(f.flops, "B.mla.q_up.wgrad") == at(f.flops, "F.mla.q_up"));
    CHECK(at(f.flops, "B.mla.kv_down.dgrad") == at(f.flops, "F.mla.kv_down"));
    CHECK_FALSE(f.count.contains("F.qkv"));
    // The latent RMSNorm reads and writes the query and key/value latents of the rank's rows.
    CHECK(at(f.bytes, "F.mla.latent_norm") == n * 2 * a * (tokens / 2) * (kQLora + kKvLora));
    // Sequence parallelism gathers the latents (52 wide) before the up-projections where
    // multi-head attention gathers the 64-wide hidden state; the backward reduce-scatters the
    // latents' gradient in place of the hidden state's, and gathers the latents again for the
    // up-projections' weight gradients in place of LayerNorm 1's output. The rest (the MLP, the
    // embedding and the head) is the same.
    Scenario mha = sc;
    mha.model.attention_kind = AttentionKind::Mha;
    const LabelTotals g = label_totals(build_program(mha, validate_plan(mha)), 0);
    const double latent = a * tokens * (kQLora + kKvLora + kRope), hidden = a * tokens * h;
    for (const char* label : {"F.tp.allgather", "B.tp.reducescatter", "B.tp.allgather"}) {
        INFO(label);
        CHECK(at(f.bytes, label) - at(g.bytes, label) == n * (latent - hidden));
    }
    CHECK(at(f.bytes, "F.tp.reducescatter") == at(g.bytes, "F.tp.reducescatter"));
    // The down-projections' gradients are partial sums over the ranks' rows: all-reduced once
    // per iteration with the norms' (fp32 gradients).
    CHECK(at(f.bytes, "tp.grad_allreduce") - at(g.bytes, "tp.grad_allreduce") == 4.0 * layers * p.whole);
}

TEST_CASE("mla: the projections keep their inputs and latents, the attention Q, K and V") {
    const LayerDims d = dims_of(mla_plan(2, 1, 1));
    const PerLayerOp m = stored_activations(d);
    const auto slot = [&](LayerOp op) { return m[static_cast<std::size_t>(op)]; };
    const double a = 2.0, rows = 16, tokens = 32;
    CHECK(slot(LayerOp::Qkv) == a * rows * (64 + 2 * (kQLora + kKvLora) + kRope));
    CHECK(slot(LayerOp::Qkv) == mla_stored_bytes(d));
    // Two heads per rank: Q and K of nope + rope, V of v_dim, and the kernel's fp32 statistics.
    CHECK(slot(LayerOp::Attn) == a * tokens * 2 * (2 * (kNope + kRope) + kV) + fused_attention_stats_bytes(d));
    CHECK(slot(LayerOp::Proj) == a * tokens * 2 * kV);
}

TEST_CASE("mla: every allocation is released, under every schedule and recompute policy") {
    for (const auto& [schedule, recompute] :
         {std::pair{Schedule::OneFOneB, Recompute::None}, std::pair{Schedule::OneFOneB, Recompute::Full},
          std::pair{Schedule::OneFOneB, Recompute::Selective}, std::pair{Schedule::ZeroBubbleH1, Recompute::None},
          std::pair{Schedule::Interleaved, Recompute::None}}) {
        Scenario sc = mla_plan(2, 2, 1);
        sc.parallel.schedule = schedule;
        sc.parallel.recompute = recompute;
        if (schedule == Schedule::Interleaved) sc.parallel.virtual_stages = 2;
        INFO("schedule " << static_cast<int>(schedule) << " recompute " << static_cast<int>(recompute));
        const sim::Program prog = build_program(sc, validate_plan(sc));
        test::check_allocations_released(prog);
        const RunResult r = run_scenario(sc);
        CHECK(r.iteration_time_s > 0.0);
    }
}

TEST_CASE("mla: a wider latent costs time and memory; folding gives the full run's answer") {
    Scenario narrow = mla_plan(2, 1, 2), wide = narrow;
    wide.model.kv_lora_rank = 4 * kKvLora;
    const RunResult a = run_scenario(narrow), b = run_scenario(wide);
    CHECK(b.iteration_time_s > a.iteration_time_s);
    CHECK(b.peak_memory_bytes > a.peak_memory_bytes);
    RunOptions folded;
    folded.fold = true;
    const RunResult c = run_scenario(narrow, folded);
    CHECK(c.iteration_time_s == a.iteration_time_s);
    CHECK(c.fingerprint == a.fingerprint);
}

TEST_CASE("mla: checked at its keys") {
    const Scenario one = mla_plan(1, 1, 1);
    CHECK(test::rejected_key(mla_plan(2, 1, 1), [](Scenario&) {}).empty());
    CHECK(test::rejected_key(one, [](Scenario& s) { s.model.q_lora_rank = 0; }) == "model.q_lora_rank");
    CHECK(test::rejected_key(one, [](Scenario& s) { s.model.swiglu = false; }) == "model.swiglu");
    CHECK(test::rejected_key(mla_plan(4, 1, 1), [](Scenario& s) {
              s.parallel.tensor_mode = TensorMode::TwoD;
              s.model.attention = AttentionKernel::Unfused;  // the 2d program's attention
          }) == "parallel.tensor_mode");
    CHECK(test::rejected_key(mla_plan(1, 1, 2), [](Scenario& s) {
              s.parallel.context = 2;
              s.parallel.data = 1;
          }) == "parallel.context");
    const auto kv_heads = [](int n) {
        return [n](Scenario& s) {
            s.model.kv_heads = n;
            s.key_lines["model.kv_heads"] = 3;
        };
    };
    CHECK(test::rejected_key(one, kv_heads(2)) == "model.kv_heads");
    CHECK(test::rejected_key(one, kv_heads(4)).empty());  // = heads: every head its own keys and values
    // The latent widths without latent attention.
    CHECK(test::rejected_key(test::tiny_scenario(1, 1, 1, 4, 4), [](Scenario& s) {
              s.model.kv_lora_rank = 16;
              s.key_lines["model.kv_lora_rank"] = 5;
          }) == "model.kv_lora_rank");
}

TEST_CASE("mla: recompute_modules [mla_up_proj] writes Q, K and V again before the attention backward") {
    // Megatron-Core's mla_up_proj under selective recomputation: the up-projections' output is not
    // kept from the forward to the backward; both up-projections (and the rotary embedding) run
    // again before the attention core's backward, under sequence parallelism after a gather of the
    // latents; the attention core itself is not recomputed unless core_attn is named too.
    const auto with_modules = [](bool core_attn, bool up) {
        Scenario sc = mla_plan(2, 1, 1);
        sc.parallel.recompute = Recompute::Selective;
        sc.parallel.recompute_modules = {core_attn, up};
        return sc;
    };
    const double a = 2.0, tokens = 32, layers = 4, micro = 4, n = layers * micro;
    const double qkv = a * tokens * 2 * (2 * (kNope + kRope) + kV);  // two heads per rank
    LayerDims d = dims_of(with_modules(false, true));
    d.set_recompute_modules({false, true});
    const LayerMemory up_only = layer_memory(d, Recompute::Selective);
    const auto attn = static_cast<std::size_t>(LayerOp::Attn);
    CHECK(up_only.recomputed_qkv == qkv);
    CHECK(up_only.forward[attn] == Approx(fused_attention_stats_bytes(d)).epsilon(1e-12));
    CHECK(up_only.recompute[attn] == 0.0);
    d.set_recompute_modules({true, true});
    const LayerMemory both = layer_memory(d, Recompute::Selective);
    CHECK(both.recomputed_qkv == qkv);
    CHECK(both.recompute[attn] == fused_attention_stats_bytes(d));
    CHECK(both.forward[attn] == Approx(0.0).margin(1e-9));

    const LabelTotals f = label_totals(build_program(with_modules(false, true), validate_plan(with_modules(false, true))), 0);
    CHECK(at(f.flops, "R.mla.q_up") == at(f.flops, "F.mla.q_up"));
    CHECK(at(f.flops, "R.mla.kv_up") == at(f.flops, "F.mla.kv_up"));
    CHECK(at(f.alloc, "R.mla.q_up") == n * qkv);
    CHECK_FALSE(f.count.contains("R.mla.q_down"));  // the latents are kept
    CHECK_FALSE(f.count.contains("R.attn"));          // core_attn not named: the core is not recomputed
    // The latents (q_lora + kv_lora + rope wide) gathered again for the recomputation, beside the
    // forward's gather and the backward's for the weight gradients.
    const LabelTotals g = label_totals(build_program(with_modules(true, false), validate_plan(with_modules(true, false))), 0);
    CHECK(at(f.bytes, "R.tp.allgather") - at(g.bytes, "R.tp.allgather") == n * a * tokens * (kQLora + kKvLora + kRope));
    CHECK(g.count.contains("R.attn"));
    CHECK_FALSE(g.count.contains("R.mla.q_up"));

    for (const bool core : {false, true}) {
        INFO("core_attn " << core);
        const Scenario sc = with_modules(core, true);
        test::check_allocations_released(build_program(sc, validate_plan(sc)));
    }
    // Less memory than keeping Q, K and V, more time (the up-projections twice).
    Scenario kept = mla_plan(2, 1, 1);
    kept.parallel.recompute = Recompute::Selective;
    const RunResult base = run_scenario(kept), up = run_scenario(with_modules(true, true));
    CHECK(up.peak_memory_bytes < base.peak_memory_bytes);
    CHECK(up.iteration_time_s > base.iteration_time_s);
    // The default modules are [core_attn]: naming them changes nothing.
    const RunResult named = run_scenario(with_modules(true, false));
    CHECK(named.fingerprint == base.fingerprint);
}

TEST_CASE("mla: recompute_modules is checked at its key") {
    const auto up = [](Scenario& s) {
        s.parallel.recompute = Recompute::Selective;
        s.parallel.recompute_modules = {true, true};
    };
    CHECK(test::rejected_key(mla_plan(2, 1, 1), up).empty());
    // Only under selective recomputation.
    CHECK(test::rejected_key(mla_plan(2, 1, 1), [](Scenario& s) {
              s.parallel.recompute = Recompute::Full;
              s.parallel.recompute_modules = {true, true};
          }) == "parallel.recompute_modules");
    CHECK(test::rejected_key(mla_plan(2, 1, 1), [](Scenario& s) {
              s.parallel.recompute_modules = {true, false};
              s.key_lines["parallel.recompute_modules"] = 7;
          }) == "parallel.recompute_modules");
    // mla_up_proj needs latent attention and the fused kernel.
    CHECK(test::rejected_key(test::tiny_scenario(1, 1, 1, 4, 4), up) == "parallel.recompute_modules");
    CHECK(test::rejected_key(mla_plan(1, 1, 1), [&](Scenario& s) {
              up(s);
              s.model.attention = AttentionKernel::Unfused;
          }) == "parallel.recompute_modules");
}
