// Context parallelism against closed forms: the rank order and groups (Megatron-Core's tp, cp, dp,
// pp), the work each rank does (1/c of every kernel, attention included), the bytes each mode
// moves per layer, the activation memory, and that folding gives the full run's answer.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/activation_memory.hpp"
#include "strategies/context_attention.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr int kMicro = 4;
constexpr int kLayers = 4;

// The tiny model as Megatron-Core runs it (fused attention), t x c x p x d GPUs.
Scenario context_plan(int t, int c, int p, int d, ContextMode mode) {
    Scenario sc = test::tiny_scenario(t, p, d, kMicro, kLayers);
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.heads = 8;
    sc.cluster.gpus_per_node = t * c * p * d;
    sc.parallel.context = c;
    sc.parallel.context_mode = mode;
    return sc;
}

struct LabelTotals {
    std::map<std::string, double> bytes, flops;
};

LabelTotals totals(const sim::Program& p, std::size_t list) {
    LabelTotals out;
    for (const sim::Op& op : p.op_lists[list].ops) {
        out.bytes[p.labels[op.label]] += op.bytes.value;
        out.flops[p.labels[op.label]] += op.flops.value;
    }
    return out;
}

double sum_of(const std::map<std::string, double>& m, std::initializer_list<const char*> labels) {
    double s = 0.0;
    for (const char* l : labels) {
        const auto it = m.find(l);
        if (it != m.end()) s += it->second;
    }
    return s;
}

}  // namespace

TEST_CASE("context parallelism: Megatron-Core's rank order and the context and data groups") {
    const Scenario sc = context_plan(2, 2, 2, 2, ContextMode::Ring);
    const Layout l = validate_plan(sc);
    REQUIRE(l.gpus() == 16);
    CHECK(l.data == 4);  // replicas of a stage's weights: data x context
    CHECK(l.data_parallel() == 2);
    CHECK(l.micro_batches == kMicro);
    const sim::Program prog = build_program(sc, l);
    for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
        // rank = tp + t * (cp + c * dp + c * d * pp)
        const int tp = static_cast<int>(r) % 2, cp = (static_cast<int>(r) / 2) % 2, dp = (static_cast<int>(r) / 4) % 2,
                  pp = static_cast<int>(r) / 8;
        CHECK(l.rank(tp, cp + 2 * dp, pp) == r);
        CHECK(l.context_of(l.dp_of(r)) == cp);
        const auto& context = prog.groups[prog.ranks[r].groups[slot::kContext]].ranks;
        REQUIRE(context.size() == 2);
        // The context group: same tensor index, data index and stage; ring order by cp index.
        CHECK(context[0] == l.rank(tp, 2 * dp, pp));
        CHECK(context[1] == l.rank(tp, 2 * dp + 1, pp));
        // Gradients are reduced over data x context: the data group holds all four replicas.
        const auto& data = prog.groups[prog.ranks[r].groups[slot::kData]].ranks;
        CHECK(data.size() == 4);
        const std::set<std::uint32_t> members(data.begin(), data.end());
        for (std::uint32_t m : context) CHECK(members.count(m) == 1);
    }
}

TEST_CASE("context parallelism: each rank does 1/c of every kernel's work, attention included") {
    for (const ContextMode mode : {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll}) {
        const Scenario one = context_plan(1, 1, 1, 1, mode), split = context_plan(1, 4, 1, 1, mode);
        const LabelTotals whole = totals(build_program(one, validate_plan(one)), 0);
        const LabelTotals part = totals(build_program(split, validate_plan(split)), 0);
        INFO("mode " << to_string(mode));
        for (const char* gemm : {"F.qkv", "F.proj", "F.fc1", "F.fc2", "B.qkv.dgrad", "B.fc2.wgrad"})
            CHECK(part.flops.at(gemm) == Approx(whole.flops.at(gemm) / 4));
        // The causal tile fraction is the whole sequence's on every rank (2 of 2c chunks each).
        CHECK(sum_of(part.flops, {"F.attn", "F.attn.step"}) == Approx(whole.flops.at("F.attn") / 4));
        CHECK(sum_of(part.flops, {"B.attn", "B.attn.step"}) == Approx(whole.flops.at("B.attn") / 4));
    }
}

TEST_CASE("context parallelism: the bytes each mode moves per layer and micro-batch") {
    const int c = 4;
    for (const ContextMode mode : {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll}) {
        const Scenario sc = context_plan(1, c, 1, 1, mode);
        const Layout l = validate_plan(sc);
        const LabelTotals got = totals(build_program(sc, l), 0);
        LayerDims d = LayerDims::make(sc.model, 1, 1, false, sc.training.precision);
        d.set_context(c, mode);
        REQUIRE(d.s == sc.model.seq_len / c);
        const double kv = context_kv_block_bytes(d);  // K and V of s/c positions
        CHECK(kv == Approx(2.0 * 2.0 * (sc.model.seq_len / c) * sc.model.hidden));
        const double per = kMicro * kLayers;
        const double q = 2.0 * (sc.model.seq_len / c) * sc.model.hidden;  // Q (or the output) of s/c positions
        INFO("mode " << to_string(mode));
        switch (mode) {
            case ContextMode::Ring:
                CHECK(got.bytes.at("F.cp.exchange") == Approx(per * (c - 1) * kv));
                CHECK(got.bytes.at("B.cp.exchange") == Approx(per * (c - 1) * kv));
                CHECK(got.bytes.at("B.cp.dkv_exchange") == Approx(per * c * kv));
                break;
            case ContextMode::AllGather:
                CHECK(got.bytes.at("F.cp.allgather") == Approx(per * c * kv));
                CHECK(got.bytes.at("B.cp.allgather") == Approx(per * c * kv));
                CHECK(got.bytes.at("B.cp.reducescatter") == Approx(per * c * kv));
                break;
            case ContextMode::AllToAll:
                CHECK(got.bytes.at("F.cp.alltoall_qkv") == Approx(per * (q + kv)));
                CHECK(got.bytes.at("F.cp.alltoall_out") == Approx(per * q));
                CHECK(got.bytes.at("B.cp.alltoall_out") == Approx(per * q));
                CHECK(got.bytes.at("B.cp.alltoall_qkv") == Approx(per * (q + kv)));
                break;
        }
    }
}

TEST_CASE("context parallelism: a layer's stored activations shrink by c") {
    const Scenario sc = context_plan(2, 1, 1, 1, ContextMode::Ring);
    LayerDims whole = LayerDims::make(sc.model, 2, 2, true, sc.training.precision);
    LayerDims part = whole;
    part.set_context(4, ContextMode::Ring);
    for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
        const LayerMemory a = layer_memory(whole, r), b = layer_memory(part, r);
        double sum_a = 0.0, sum_b = 0.0;
        for (std::size_t i = 0; i < a.forward.size(); ++i) sum_a += a.forward[i], sum_b += b.forward[i];
        CHECK(sum_b == Approx(sum_a / 4));
    }
}

TEST_CASE("context parallelism runs: the folded simulation equals the full one") {
    for (const ContextMode mode : {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll}) {
        const Scenario sc = context_plan(2, 2, 2, 2, mode);
        RunOptions full;
        full.hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
        RunOptions folded = full;
        folded.fold = true;
        const RunResult a = run_scenario(sc, full), b = run_scenario(sc, folded);
        INFO("mode " << to_string(mode));
        CHECK(a.iteration_time_s > 0.0);
        CHECK(b.sim_fold_factor > 1.0);
        CHECK(a.iteration_time_s == b.iteration_time_s);
        CHECK(a.fingerprint == b.fingerprint);
        CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    }
}

// The exchanges of keys and values are a part of the breakdown of their own: on the tiny model
// the attention cannot hide their latency, so some of it is exposed; without context parallelism
// the part is empty. Either way the parts add up to the iteration.
TEST_CASE("context parallelism runs: exposed exchanges are context communication in the breakdown") {
    for (const ContextMode mode : {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll}) {
        for (const int c : {1, 2}) {
            const Scenario sc = context_plan(2, c, 2, 2, mode);
            RunOptions o;
            o.hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
            const RunResult r = run_scenario(sc, o);
            INFO("mode " << to_string(mode) << ", context " << c);
            const Breakdown& b = r.breakdown;
            if (c == 1) CHECK(b.cp_comm_exposed_s == 0.0);
            else CHECK(b.cp_comm_exposed_s > 0.0);
            CHECK(b.ep_comm_exposed_s == 0.0);
            CHECK(b.compute_s + b.recompute_s + b.exposed_comm_s() + b.bubble_s == Approx(r.iteration_time_s).epsilon(1e-9));
        }
    }
}

TEST_CASE("context parallelism: plans it cannot run are refused at their key") {
    const auto refused = [](Scenario sc, const std::string& key, const std::string& says) {
        try {
            validate_plan(sc);
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK(e.where().key == key);
            CHECK_THAT(e.what(), Catch::Contains(says));
        }
    };
    Scenario odd = context_plan(1, 4, 1, 1, ContextMode::Ring);
    odd.model.seq_len = 36;  // not a multiple of 2c = 8
    refused(odd, "parallel.context", "2*context = 8 chunks");
    Scenario unfused = context_plan(1, 2, 1, 1, ContextMode::Ring);
    unfused.model.attention = AttentionKernel::Unfused;
    refused(unfused, "parallel.context", "model.attention: fused");
    Scenario heads = context_plan(2, 4, 1, 1, ContextMode::AllToAll);
    heads.model.kv_heads = 4;  // 2 key/value heads per tensor rank for 4 context ranks
    refused(heads, "parallel.context_mode", "use ring or all-gather");
    Scenario shard = context_plan(1, 2, 1, 4, ContextMode::Ring);
    shard.parallel.zero_stage = 3;
    shard.parallel.shard_group = 3;
    refused(shard, "parallel.shard_group", "must divide data*context 8");
    shard.parallel.shard_group = 1;
    refused(shard, "parallel.shard_group", "a multiple of context 2");
    Scenario gpus = context_plan(1, 2, 1, 2, ContextMode::Ring);
    gpus.parallel.data = 3;
    refused(gpus, "parallel.data", "tensor*context*pipeline*data = 6");
}
