// Megatron-Core's recompute modules under selective recomputation: the output-discarding layernorm
// (the norms that are modules of their own, LayerDims::separate_norm1/2) and moe_act (the experts'
// activation), mlp (a dense layer's MLP checkpointed), moe (a mixture-of-experts layer's MLP
// checkpointed) and shared_experts (its shared experts checkpointed). Against closed forms: the bytes each moves from the forward's stores to the
// recomputation, the kernels that run again (the forward's bytes, once per layer and micro-batch,
// in the recompute category) and where, memory conservation under every schedule, the peak
// memory saved on one stage, and the plan checks at their key.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "strategies/activation_memory.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/mla_layer.hpp"
#include "strategies/moe_layer.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;
using test::at;
using test::LabelTotals;

namespace {

constexpr int kMicro = 4, kLayers = 4;
constexpr double kA = 2.0;  // bytes per 16-bit activation
constexpr double kTokens = 32, kHidden = 64;

// The tiny model with `layers` layers, `micro` micro-batches of one sequence on t GPUs (sequence
// parallel when t > 1), selective recomputation of the attention core plus `modules`.
Scenario selective(Scenario sc, bool layernorm, bool moe_act, bool mlp = false, bool moe = false,
                   bool shared_experts = false) {
    sc.parallel.recompute = Recompute::Selective;
    sc.parallel.recompute_modules = {true, false, layernorm, moe_act, mlp, moe, shared_experts};
    sc.key_lines["parallel.recompute_modules"] = 1;
    return sc;
}

// Megatron-Core's mixture of experts with Transformer Engine: the norm before the router is a
// module of its own, the one before QKV is fused into the QKV GEMM.
Scenario moe_te(int t) {
    Scenario sc = test::tiny_scenario(t, 1, 1, kMicro, kLayers);
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.transformer_engine = true;
    sc.model.experts = 8;
    sc.model.experts_per_token = 2;
    sc.model.expert_ffn_hidden = 96;
    sc.parallel.sequence_parallel = t > 1;
    return sc;
}

// A dense layer without Transformer Engine: both norms are modules of their own.
Scenario dense_plain(int t) {
    Scenario sc = test::tiny_scenario(t, 1, 1, kMicro, kLayers);
    sc.parallel.sequence_parallel = t > 1;
    return sc;
}

LayerDims dims_of(const Scenario& sc) {
    LayerDims d = LayerDims::make(sc.model, sc.training.micro_batch, sc.parallel.tensor, sc.parallel.sequence_parallel,
                                  sc.training.precision);
    d.set_experts(sc.model, sc.parallel.expert, sc.parallel.expert_tensor);
    d.set_recompute_modules(sc.parallel.recompute_modules);
    return d;
}

LabelTotals totals(const Scenario& sc) { return test::label_totals(build_program(sc, validate_plan(sc)), 0); }

int count_of(const LabelTotals& t, const std::string& key) { return at(t.count, key); }

std::size_t slot(LayerOp op) { return static_cast<std::size_t>(op); }

void check_released_under_schedules(const Scenario& base) {
    for (const Schedule s : {Schedule::OneFOneB, Schedule::ZeroBubbleH1, Schedule::GPipe}) {
        Scenario sc = base;
        sc.parallel.schedule = s;
        INFO("schedule " << static_cast<int>(s));
        test::check_allocations_released(build_program(sc, validate_plan(sc)));
    }
}

// A checkpointed module on one stage under 1F1B: the forward's end keeps each layer's `moved`
// bytes less; the backward writes one layer's back at a time, each freed by its own backward before
// the next layer's, so the peak drops by the stores of all layers but one at least and of all at
// most. The recomputation costs time, and the folded run is the full one.
void check_checkpointed_peak(const Scenario& kept, const Scenario& checkpointed, double moved) {
    const RunResult ra = run_scenario(kept), rb = run_scenario(checkpointed);
    CHECK(ra.peak_memory_bytes - rb.peak_memory_bytes >= moved * (kLayers - 1));
    CHECK(ra.peak_memory_bytes - rb.peak_memory_bytes <= moved * kLayers);
    CHECK(rb.iteration_time_s > ra.iteration_time_s);
    RunOptions folded;
    folded.fold = true;
    CHECK(run_scenario(checkpointed, folded).fingerprint == rb.fingerprint);
}

}  // namespace

TEST_CASE("layernorm: the router's norm output is written again at the start of the expert layer's backward") {
    const Scenario kept = selective(moe_te(2), false, false), norm = selective(moe_te(2), true, false);
    const double output = kA * kTokens * kHidden / 2;  // the rank's half of the rows (sequence parallel)
    const double probs = 4.0 * (kTokens / 2) * 8;      // fp32 per routed token and expert
    const LayerDims d = dims_of(norm);
    REQUIRE_FALSE(d.separate_norm1());  // fused into QKV by Transformer Engine
    REQUIRE(d.separate_norm2());
    const LayerMemory m = layer_memory(d, Recompute::Selective);
    CHECK(m.recomputed_norm1 == 0.0);
    CHECK(m.recomputed_norm2 == output);
    CHECK(m.forward[slot(LayerOp::Fc1)] == Approx(probs).epsilon(1e-12));
    CHECK(m.recompute[slot(LayerOp::Fc1)] == output);
    CHECK(m.forward[slot(LayerOp::Qkv)] == layer_memory(dims_of(kept), Recompute::Selective).forward[slot(LayerOp::Qkv)]);

    const LabelTotals a = totals(kept), b = totals(norm);
    const double n = kLayers * kMicro;
    CHECK(count_of(b, "R.ln2") == n);
    CHECK_FALSE(b.count.contains("R.ln1"));
    CHECK(at(b.bytes, "R.ln2") == at(b.bytes, "F.ln2"));  // the forward kernel again
    CHECK(at(b.alloc, "R.ln2") == Approx(n * output));
    CHECK(at(b.alloc, "F.moe.router") == Approx(n * probs));
    CHECK(at(a.alloc, "F.moe.router") == Approx(n * (probs + output)));
    CHECK(at(b.freed, "B.moe.router.wgrad") == at(a.freed, "B.moe.router.wgrad"));  // both, as before
    check_released_under_schedules(norm);

    const RunResult ra = run_scenario(kept), rb = run_scenario(norm);
    CHECK(rb.peak_memory_bytes < ra.peak_memory_bytes);
    CHECK(rb.iteration_time_s > ra.iteration_time_s);
    RunOptions folded;
    folded.fold = true;
    CHECK(run_scenario(norm, folded).fingerprint == rb.fingerprint);
}

TEST_CASE("layernorm: without Transformer Engine both norms of a dense layer are modules and run again") {
    const Scenario kept = selective(dense_plain(2), false, false), norm = selective(dense_plain(2), true, false);
    const double output = kA * kTokens * kHidden / 2;
    const LayerDims d = dims_of(norm);
    REQUIRE(d.separate_norm1());
    REQUIRE(d.separate_norm2());
    const LayerMemory m = layer_memory(d, Recompute::Selective);
    // The QKV and FC1 inputs are the norms' outputs: nothing of them is kept.
    CHECK(m.forward[slot(LayerOp::Qkv)] == 0.0);
    CHECK(m.forward[slot(LayerOp::Fc1)] == 0.0);
    CHECK(m.recompute[slot(LayerOp::Qkv)] == output);
    CHECK(m.recompute[slot(LayerOp::Fc1)] == output);

    const LabelTotals a = totals(kept), b = totals(norm);
    const double n = kLayers * kMicro;
    for (const char* ln : {"ln1", "ln2"}) {
        INFO(ln);
        CHECK(count_of(b, std::string("R.") + ln) == n);
        CHECK(at(b.bytes, std::string("R.") + ln) == at(b.bytes, std::string("F.") + ln));
        CHECK(at(b.alloc, std::string("R.") + ln) == Approx(n * output));
    }
    CHECK(at(b.alloc, "F.qkv") == 0.0);
    CHECK(at(a.alloc, "F.qkv") == Approx(n * output));
    CHECK(at(b.freed, "B.qkv.wgrad") == at(a.freed, "B.qkv.wgrad"));
    check_released_under_schedules(norm);
    Scenario chunks = norm;  // Merak's sub-batches: each recomputes its own part
    chunks.parallel.overlap_chunks = 2;
    test::check_allocations_released(build_program(chunks, validate_plan(chunks)));

    // One stage, 1F1B: one micro-batch is in flight, and the peak is its forward's end (the
    // head's logits and loss), where each of its layers keeps two norm outputs less; the
    // recomputation comes after, one layer at a time.
    const RunResult ra = run_scenario(kept), rb = run_scenario(norm);
    CHECK(ra.peak_memory_bytes - rb.peak_memory_bytes == Approx(2 * output * kLayers).epsilon(1e-9));
    CHECK(rb.iteration_time_s > ra.iteration_time_s);
}

TEST_CASE("layernorm: latent attention's input norm is a module of its own") {
    Scenario sc = selective(moe_te(2), true, false);
    sc.model.attention_kind = AttentionKind::Mla;
    sc.model.q_lora_rank = 32;
    sc.model.kv_lora_rank = 16;
    sc.model.qk_nope_head_dim = 8;
    sc.model.qk_rope_head_dim = 4;
    sc.model.v_head_dim = 8;
    const LayerDims d = dims_of(sc);
    REQUIRE(d.separate_norm1());
    const LayerMemory m = layer_memory(d, Recompute::Selective);
    const double output = kA * kTokens * kHidden / 2;
    CHECK(m.recomputed_norm1 == output);
    CHECK(m.forward[slot(LayerOp::Qkv)] == Approx(mla_stored_bytes(d) - output).epsilon(1e-12));
    const LabelTotals b = totals(sc);
    CHECK(count_of(b, "R.ln1") == kLayers * kMicro);
    CHECK(at(b.alloc, "F.mla.q_down") == Approx(kLayers * kMicro * (mla_stored_bytes(d) - output)));
    check_released_under_schedules(sc);
}

TEST_CASE("moe_act: the experts' activation output is freed after FC2 and written again before its backward") {
    const Scenario kept = selective(moe_te(2), false, false), act = selective(moe_te(2), false, true);
    const MoeActivations keep = moe_activations(dims_of(act));
    const LabelTotals a = totals(kept), b = totals(act);
    const double n = kLayers * kMicro;
    CHECK(at(b.freed, "F.moe.expert_fc2") == Approx(n * keep.expert_act));
    CHECK(at(a.freed, "F.moe.expert_fc2") == 0.0);
    CHECK(count_of(b, "R.moe.expert_act") == n);
    CHECK(at(b.bytes, "R.moe.expert_act") == at(b.bytes, "F.moe.expert_act"));
    CHECK(at(b.alloc, "R.moe.expert_act") == Approx(n * keep.expert_act));
    CHECK_FALSE(b.count.contains("R.moe.expert_fc1"));  // FC1's output is kept
    check_released_under_schedules(act);

    // One stage, 1F1B: at the peak, the forward's end of the micro-batch in flight, every layer
    // keeps its activation output less.
    const RunResult ra = run_scenario(kept), rb = run_scenario(act);
    CHECK(ra.peak_memory_bytes - rb.peak_memory_bytes == Approx(keep.expert_act * kLayers).epsilon(1e-9));
    CHECK(rb.iteration_time_s > ra.iteration_time_s);
    // Both modules: the two savings add up.
    const RunResult rc = run_scenario(selective(moe_te(2), true, true));
    CHECK(rc.peak_memory_bytes < rb.peak_memory_bytes);
}

// A dense layer as Megatron-Core with Transformer Engine runs it: the norm before FC1 is fused.
Scenario dense_te(int t) {
    Scenario sc = dense_plain(t);
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.transformer_engine = true;
    return sc;
}

TEST_CASE("mlp: a dense layer's checkpointed MLP runs its forward again at the start of its backward") {
    const Scenario kept = selective(dense_te(2), false, false), mlp = selective(dense_te(2), false, false, true);
    const LayerDims d = dims_of(mlp);
    REQUIRE_FALSE(d.separate_norm2());
    const LayerMemory before = layer_memory(dims_of(kept), Recompute::Selective);
    const LayerMemory after = layer_memory(d, Recompute::Selective);
    double moved = 0.0;
    for (LayerOp op : {LayerOp::Fc1, LayerOp::Act, LayerOp::Fc2}) {
        INFO(static_cast<int>(op));
        CHECK(after.forward[slot(op)] == 0.0);
        CHECK(after.recompute[slot(op)] == before.forward[slot(op)]);
        moved += before.forward[slot(op)];
    }
    CHECK(after.forward[slot(LayerOp::Ln2)] == before.forward[slot(LayerOp::Ln2)]);  // the checkpoint's input
    // The norm's output (the rank's rows), FC1's output (gate and up, 2 x ffn wide, ffn = 4h) and
    // the activation's output (ffn wide), the last two split over the two ranks: 16-bit each.
    const double ffn = 4 * kHidden;
    CHECK(moved == kA * kTokens * (kHidden / 2 + 2 * ffn / 2 + ffn / 2));

    const LabelTotals a = totals(kept), b = totals(mlp);
    const double n = kLayers * kMicro;
    for (const char* op : {"ln2", "fc1", "act", "fc2"}) {
        INFO(op);
        CHECK(count_of(b, std::string("R.") + op) == n);
        CHECK(at(b.bytes, std::string("R.") + op) == at(b.bytes, std::string("F.") + op));
        CHECK(count_of(a, std::string("R.") + op) == 0);
    }
    CHECK(at(b.alloc, "R.fc1") + at(b.alloc, "R.act") + at(b.alloc, "R.fc2") == Approx(n * moved));
    CHECK(at(b.alloc, "F.fc1") + at(b.alloc, "F.act") + at(b.alloc, "F.fc2") == 0.0);
    // The checkpoint's forward gathers FC1's input and reduces FC2's output again.
    CHECK(count_of(b, "R.tp.allgather") == n);
    CHECK(count_of(b, "R.tp.reducescatter") == n);
    check_released_under_schedules(mlp);

    check_checkpointed_peak(kept, mlp, moved);
}

// The expert layer with expert parallelism over the two ranks and a shared expert: every part of
// the MoE MLP is there to be recomputed.
Scenario moe_ep_shared() {
    Scenario sc = moe_te(2);
    sc.parallel.expert = 2;
    sc.model.shared_experts = 1;
    return sc;
}

TEST_CASE("moe: a mixture-of-experts layer's checkpointed MLP runs its forward again at the start of its backward") {
    const Scenario kept = selective(moe_ep_shared(), false, false), moe = selective(moe_ep_shared(), false, false, false, true);
    const LayerDims d = dims_of(moe);
    REQUIRE(d.moe_checkpointed());
    const MoeActivations keep = moe_activations(d);
    const double probs = router_probability_bytes(d);
    const double input = kA * kTokens * kHidden / 2;  // the norm's output over the rank's rows
    const LayerMemory before = layer_memory(dims_of(kept), Recompute::Selective);
    const LayerMemory after = layer_memory(d, Recompute::Selective);
    CHECK(before.forward[slot(LayerOp::Fc1)] == Approx(input + probs).epsilon(1e-12));
    CHECK(after.forward[slot(LayerOp::Fc1)] == Approx(input).epsilon(1e-12));  // the checkpoint's input
    CHECK(after.recompute[slot(LayerOp::Fc1)] == Approx(probs).epsilon(1e-12));

    const LabelTotals a = totals(kept), b = totals(moe);
    const double n = kLayers * kMicro;
    // Every kernel of the MoE MLP's forward runs again, with its forward's bytes, and allocates
    // what the forward allocated without the module; the forward keeps only the router's input.
    for (const char* op : {"router", "router_topk", "permute", "expert_fc1", "expert_act", "expert_fc2", "unpermute",
                           "shared_fc1", "shared_act", "shared_fc2"}) {
        INFO(op);
        const std::string f = std::string("F.moe.") + op, r = std::string("R.moe.") + op;
        CHECK(count_of(b, r) == n);
        CHECK(count_of(a, r) == 0);
        CHECK(at(b.bytes, r) == at(b.bytes, f));
        CHECK(at(b.flops, r) == at(b.flops, f));
        if (std::string(op) == "router") continue;
        CHECK(at(b.alloc, r) == Approx(at(a.alloc, f)));
    }
    CHECK(at(b.alloc, "F.moe.router") == Approx(n * input));
    CHECK(at(b.alloc, "R.moe.router") == Approx(n * probs));
    for (const char* op : {"F.moe.expert_fc1", "F.moe.expert_act", "F.moe.shared_fc1", "F.moe.shared_act"}) {
        INFO(op);
        CHECK(at(b.alloc, op) == 0.0);
    }
    CHECK(at(a.alloc, "F.moe.expert_fc1") + at(a.alloc, "F.moe.expert_act") + at(a.alloc, "F.moe.shared_fc1") +
              at(a.alloc, "F.moe.shared_act") ==
          Approx(n * keep.total()));
    // The checkpoint's forward exchanges the tokens again (dispatch and combine) and gathers and
    // reduces the shared expert's tokens again (sequence parallel).
    CHECK(count_of(b, "R.ep.alltoall_dispatch") == n);
    CHECK(count_of(b, "R.ep.alltoall_combine") == n);
    CHECK(count_of(b, "R.tp.allgather") == n);
    CHECK(count_of(b, "R.tp.reducescatter") == n);
    check_released_under_schedules(moe);

    check_checkpointed_peak(kept, moe, probs + keep.total());
}

TEST_CASE("moe with layernorm and moe_act: the norm first, the checkpoint's forward, the activation once more") {
    // Nemotron 3 Nano's recipe names moe, layernorm, core_attn and moe_act together.
    const Scenario all = selective(moe_ep_shared(), true, true, false, true);
    const sim::Program p = build_program(all, validate_plan(all));
    const LabelTotals b = test::label_totals(p, 0);
    const double n = kLayers * kMicro;
    CHECK(count_of(b, "R.ln2") == n);
    CHECK(count_of(b, "R.moe.router") == n);
    // The activation: once in the checkpoint's forward (whose FC2 frees its output) and once
    // before FC2's backward.
    CHECK(count_of(b, "R.moe.expert_act") == 2 * n);
    const LayerDims d = dims_of(all);
    const MoeActivations keep = moe_activations(d);
    CHECK(at(b.freed, "R.moe.expert_fc2") == Approx(n * keep.expert_act));
    CHECK(at(b.freed, "F.moe.expert_fc2") == 0.0);
    // The norm's output is the checkpoint's input: it is written before the router runs again,
    // and the router's recomputation allocates only the probabilities.
    const LayerMemory m = layer_memory(d, Recompute::Selective);
    CHECK(m.forward[slot(LayerOp::Fc1)] == 0.0);
    CHECK(at(b.alloc, "R.moe.router") == Approx(n * router_probability_bytes(d)));
    const auto& ops = p.op_lists[0].ops;
    int norms = 0, routers = 0;
    for (const sim::Op& op : ops) {
        const std::string& l = p.labels[op.label];
        if (l == "R.ln2") ++norms;
        if (l == "R.moe.router") {
            ++routers;
            CHECK(norms == routers);  // each layer's norm came first
        }
    }
    check_released_under_schedules(all);
}

TEST_CASE("shared_experts: the shared experts' checkpointed MLP runs again before their backward") {
    const Scenario kept = selective(moe_ep_shared(), false, false),
                   shared = selective(moe_ep_shared(), false, false, false, false, true);
    const LayerDims d = dims_of(shared);
    REQUIRE(d.shared_checkpointed());
    const MoeActivations keep = moe_activations(d);
    const LabelTotals a = totals(kept), b = totals(shared);
    const double n = kLayers * kMicro;
    for (const char* op : {"shared_fc1", "shared_act", "shared_fc2"}) {
        INFO(op);
        const std::string f = std::string("F.moe.") + op, r = std::string("R.moe.") + op;
        CHECK(count_of(b, r) == n);
        CHECK(at(b.bytes, r) == at(b.bytes, f));
        CHECK(at(b.alloc, r) == Approx(at(a.alloc, f)));
        CHECK(at(b.alloc, f) == 0.0);
    }
    CHECK(at(b.alloc, "R.moe.shared_fc1") + at(b.alloc, "R.moe.shared_act") ==
          Approx(n * (keep.shared_fc1 + keep.shared_act)));
    CHECK_FALSE(b.count.contains("R.moe.expert_fc1"));  // the routed experts keep theirs
    // The checkpoint's forward gathers the norm's output and reduces the shared output again.
    CHECK(count_of(b, "R.tp.allgather") == n);
    CHECK(count_of(b, "R.tp.reducescatter") == n);
    check_released_under_schedules(shared);
    const double moved = keep.shared_fc1 + keep.shared_act;
    check_checkpointed_peak(kept, shared, moved);

    // Nested in moe's checkpoint: the checkpoint's run keeps nothing of the shared experts and
    // they run a third time before their backward, which allocates what they keep.
    const Scenario both = selective(moe_ep_shared(), false, false, false, true, true);
    const LabelTotals c = totals(both);
    CHECK(count_of(c, "R.moe.shared_fc1") == 2 * n);
    CHECK(count_of(c, "R.moe.expert_fc1") == n);
    CHECK(at(c.alloc, "R.moe.shared_fc1") + at(c.alloc, "R.moe.shared_act") == Approx(n * moved));
    CHECK(at(c.alloc, "F.moe.shared_fc1") + at(c.alloc, "F.moe.shared_act") == 0.0);
    const sim::Program p = build_program(both, validate_plan(both));
    int runs = 0;  // per layer: the checkpoint's run allocates nothing, the last one allocates
    for (const sim::Op& op : p.op_lists[0].ops) {
        if (p.labels[op.label] != "R.moe.shared_fc1") continue;
        CHECK((op.memory_alloc.value > 0.0) == (runs % 2 == 1));
        ++runs;
    }
    check_released_under_schedules(both);
    RunOptions folded;
    folded.fold = true;
    CHECK(run_scenario(both, folded).fingerprint == run_scenario(both).fingerprint);
}

TEST_CASE("layernorm, moe_act and mlp are checked at parallel.recompute_modules") {
    const std::string key = "parallel.recompute_modules";
    CHECK(test::rejected_key(selective(moe_te(2), true, true), [](Scenario&) {}).empty());
    CHECK(test::rejected_key(selective(dense_plain(2), true, false), [](Scenario&) {}).empty());
    // Transformer Engine fuses both norms of a dense layer with ordinary attention: nothing to do.
    CHECK(test::rejected_key(selective(dense_plain(2), true, false),
                             [](Scenario& s) { s.model.transformer_engine = true; }) == key);
    // moe_act needs experts.
    CHECK(test::rejected_key(selective(dense_plain(2), false, true), [](Scenario&) {}) == key);
    // Only under selective recomputation, and in the 1d layer program.
    CHECK(test::rejected_key(selective(moe_te(2), false, true),
                             [](Scenario& s) { s.parallel.recompute = Recompute::Full; }) == key);
    CHECK(test::rejected_key(selective(test::tiny_scenario(4, 1, 1, kMicro, kLayers), true, false), [](Scenario& s) {
              s.parallel.tensor_mode = TensorMode::TwoD;
          }) == key);
    // mlp: a dense layer, its norm fused into FC1.
    CHECK(test::rejected_key(selective(dense_te(2), false, false, true), [](Scenario&) {}).empty());
    CHECK(test::rejected_key(selective(dense_plain(2), false, false, true), [](Scenario&) {}) == key);
    CHECK(test::rejected_key(selective(moe_te(2), false, false, true), [](Scenario&) {}) == key);
    CHECK(test::rejected_key(selective(moe_te(2), false, false, true),
                             [](Scenario& s) { s.model.dense_layers = 1; }).empty());
    // moe: a mixture-of-experts model, in the 1d layer program.
    CHECK(test::rejected_key(selective(moe_te(2), false, false, false, true), [](Scenario&) {}).empty());
    CHECK(test::rejected_key(selective(dense_te(2), false, false, false, true), [](Scenario&) {}) == key);
    // shared_experts: a mixture of experts with shared experts.
    CHECK(test::rejected_key(selective(moe_ep_shared(), false, false, false, false, true), [](Scenario&) {}).empty());
    CHECK(test::rejected_key(selective(moe_te(2), false, false, false, false, true), [](Scenario&) {}) == key);
}
