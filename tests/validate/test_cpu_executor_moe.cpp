// Mixture-of-experts programs, executed on threads: each rank routes its own tokens, and the loss,
// every gradient (router, experts, shared experts) and the updated weights match the
// single-device reference only when the dispatch and combine all-to-alls, the expert-tensor
// gather and reduce-scatter and the expert-data reduction move the routed rows (unequal per
// expert, as the router chose them) to the right ranks.
#include <chrono>

#include "tests/validate/cpu_executor_cases.hpp"
#include "validate/cpu/moe_math.hpp"

using namespace cuboid;
using namespace cuboid::cpu;
using namespace cuboid::cpu::cases;

namespace {

// The tiny GPT of cases::scenario_of with 4 experts of 16, two per token (one per token would
// give every weight 1 and the router no gradient, moe_math.hpp), over ep x etp ranks.
struct MoeCase {
    Case base;
    int ep = 1, etp = 1;
    int shared = 0;        // shared experts (of 16 each)
    int dense_layers = 0;  // leading layers with the dense MLP
};

Scenario moe_scenario(const MoeCase& m) {
    Scenario sc = scenario_of(m.base);
    sc.model.experts = 4;
    sc.model.experts_per_token = 2;
    sc.model.expert_ffn_hidden = 16;
    sc.model.shared_experts = m.shared;
    sc.model.dense_layers = m.dense_layers;
    sc.parallel.expert = m.ep;
    sc.parallel.expert_tensor = m.etp;
    return sc;
}

Outcome run(const MoeCase& m, const TaggedProgram* program = nullptr, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    const Scenario sc = moe_scenario(m);
    return program ? execute(sc, *program, timeout) : execute(sc, build(sc), timeout);
}

void check_moe(const MoeCase& m) {
    const Outcome o = run(m);
    INFO("t=" << m.base.t << " p=" << m.base.p << " d=" << m.base.d << " sp " << m.base.sp << " zero " << m.base.zero
              << " recompute " << to_string(m.base.recompute) << " ep " << m.ep << " etp " << m.etp << " shared "
              << m.shared << " dense layers " << m.dense_layers);
    check_agreement(o);
}

// The case's run with one op of stage `list` removed: the first `label` of a transformer layer,
// or (`edge`) the first outside the layers.
enum class Where : bool { Layer, Edge };
Outcome without(const MoeCase& m, std::size_t list, const std::string& label, Where where = Where::Layer) {
    TaggedProgram tp = build(moe_scenario(m));
    erase_op(tp, list, where == Where::Layer ? first_op(tp, list, label, true) : first_edge_op(tp, list, label));
    return run(m, &tp, std::chrono::milliseconds(2000));
}

MoeCase expert_parallel(int ep, int d) {
    MoeCase m{Case{1, 1, d}};
    m.ep = ep;
    return m;
}

// The expert layers the recompute modules' cases run under selective recomputation: expert
// parallelism with a shared expert and a dense layer; tensor and sequence parallelism around the
// experts; ZB-H1's split backward.
std::vector<MoeCase> selective_module_cases() {
    const auto fine = [](MoeCase m) {
        m.base.recompute = Recompute::Selective;
        return m;
    };
    MoeCase plain = fine(expert_parallel(2, 2));
    plain.shared = 1;
    plain.dense_layers = 1;
    MoeCase sp = fine(MoeCase{Case{2, 2, 1, Schedule::OneFOneB, Recompute::None, true}});
    sp.ep = 2;
    sp.shared = 1;
    MoeCase h1 = fine(MoeCase{Case{1, 2, 2, Schedule::ZeroBubbleH1}});
    h1.ep = 2;
    h1.shared = 1;
    return {plain, sp, h1};
}

}  // namespace

TEST_CASE("mixture-of-experts reference gradients match finite differences", "[cpu_executor][moe]") {
    MoeCase m;
    m.shared = 1;
    m.dense_layers = 1;
    const GptDims d = GptDims::of(moe_scenario(m).model);
    GptParams p = init_params(d, 7);
    const Batch batch = make_batch(d, 2, 11);
    const Reference ref = reference_step(d, p, batch);
    const auto check = [&](Mat& w, const Mat& g, Eigen::Index i) { check_central_difference(d, p, batch, w, g, i); };
    REQUIRE_FALSE(p.layers[0].moe);
    REQUIRE(p.layers[1].moe);
    for (Eigen::Index i : {3, 40, 101}) check(p.layers[1].wr, ref.grads.layers[1].wr, i);  // through the weights
    check(p.layers[1].ew1, ref.grads.layers[1].ew1, 32 * 20 + 5);
    check(p.layers[2].eb1, ref.grads.layers[2].eb1, 50);
    check(p.layers[2].ew2, ref.grads.layers[2].ew2, 700);
    check(p.layers[3].eb2, ref.grads.layers[3].eb2, 70);
    check(p.layers[3].sw1, ref.grads.layers[3].sw1, 90);
    check(p.layers[3].sb2, ref.grads.layers[3].sb2, 3);
    check(p.layers[2].ln2_g, ref.grads.layers[2].ln2_g, 6);
    check(p.layers[0].w1, ref.grads.layers[0].w1, 300);
    CHECK(ref.grads.layers[1].wr.cwiseAbs().maxCoeff() > 1e-6);  // the router learns
}

TEST_CASE("top-k routing weights are the softmax of the chosen logits", "[cpu_executor][moe]") {
    Mat logits(2, 4);
    logits << 0.5, 2.0, -1.0, 1.0,  //
        3.0, 3.0, 0.0, -2.0;         // a tie goes to the lower index
    const Routing r = route(logits, 2);
    CHECK(r.expert == std::vector<int>{1, 3, 0, 1});
    CHECK(r.weight(0, 0) == Approx(1.0 / (1.0 + std::exp(-1.0))));
    CHECK(r.weight(1, 0) == Approx(0.5));
    CHECK(copies_by_expert(r) == std::vector<int>{2, 0, 3, 1});
}

TEST_CASE("expert parallelism reproduces the reference", "[cpu_executor][moe]") {
    check_moe(MoeCase{});  // every expert on the one rank: no exchange
    check_moe(expert_parallel(2, 2));
    check_moe(expert_parallel(4, 4));
}

TEST_CASE("expert tensor parallelism reproduces the reference", "[cpu_executor][moe]") {
    MoeCase etp_only{Case{1, 1, 2}};
    etp_only.etp = 2;
    check_moe(etp_only);
    MoeCase both{Case{1, 1, 4}};
    both.ep = 2;
    both.etp = 2;
    check_moe(both);
}

TEST_CASE("shared experts and dense leading layers reproduce the reference", "[cpu_executor][moe]") {
    MoeCase shared = expert_parallel(2, 2);
    shared.shared = 1;
    check_moe(shared);
    MoeCase dense = expert_parallel(2, 2);
    dense.dense_layers = 1;
    dense.shared = 2;
    check_moe(dense);
}

TEST_CASE("tensor and sequence parallelism around the experts reproduce the reference", "[cpu_executor][moe]") {
    // The expert group is the tensor group: each tensor rank routes its own b*s/t tokens.
    MoeCase m{Case{2, 1, 1, Schedule::OneFOneB, Recompute::None, true}};
    m.ep = 2;
    m.shared = 1;
    check_moe(m);
    m.ep = 1;
    m.etp = 2;
    check_moe(m);
}

TEST_CASE("expert gradients are reduced over the expert-data group", "[cpu_executor][moe]") {
    // d = 4, ep = 2: the data group has 4 replicas, the expert-data group 2.
    check_moe(expert_parallel(2, 4));
    MoeCase zero = expert_parallel(2, 4);
    zero.base.zero = 1;  // reduce-scatter and gather of the experts' shards over the expert-data group
    check_moe(zero);
    MoeCase with_tp{Case{2, 1, 2, Schedule::OneFOneB, Recompute::None, true}};
    with_tp.ep = 2;  // expert group = tensor group; expert-data group = data group
    with_tp.shared = 1;
    check_moe(with_tp);
}

TEST_CASE("pipelined and recomputed expert layers reproduce the reference", "[cpu_executor][moe]") {
    MoeCase pipelined{Case{1, 2, 2}};
    pipelined.ep = 2;
    pipelined.dense_layers = 1;
    check_moe(pipelined);
    MoeCase interleaved{Case{1, 2, 2, Schedule::Interleaved}};
    interleaved.base.v = 2;
    interleaved.ep = 2;
    interleaved.shared = 1;
    check_moe(interleaved);
    for (Recompute policy : {Recompute::Full, Recompute::Selective, Recompute::StageAware}) {
        MoeCase recomputed = expert_parallel(2, 2);
        recomputed.base.recompute = policy;
        recomputed.shared = 1;
        check_moe(recomputed);
    }
}

// Megatron-Core's output-discarding modules around the experts: the router's norm output and the
// experts' activation output are dropped after the forward and written again in the backward;
// the gradients match the reference only if the recomputed values are the forward's and reach the
// weight gradients that read them (the router's, the shared FC1's, expert FC2's). The executor
// drops the activation output where the program's FC2 forward releases it, so a program without
// its recomputation fails; the norm's output, which the router's allocation keeps no longer, it
// cannot tell from the probabilities beside it: there the check is that the recomputed norm equals
// the forward's (recompute_diff). The dense layers' norms are checked the other way too
// (test_cpu_executor.cpp).
TEST_CASE("the layernorm and moe_act modules reproduce the reference", "[cpu_executor][moe]") {
    const std::vector<MoeCase> cases = selective_module_cases();
    for (const MoeCase& m : cases) {
        Scenario sc = moe_scenario(m);
        sc.parallel.recompute_modules = {true, false, true, true};
        INFO("t=" << m.base.t << " p=" << m.base.p << " schedule " << static_cast<int>(m.base.schedule));
        const TaggedProgram tp = build(sc);
        check_agreement(execute(sc, tp, std::chrono::milliseconds(10000)));
        // Without the activation's recomputation expert FC2's backward has no input to read.
        CHECK_FALSE(without_layer_op(sc, tp, "R.moe.expert_act").run.ok());
    }
}

// Megatron-Core's moe module: the expert layer's MLP checkpointed from its input; its forward
// (router, permutation, the exchanges, the experts, the shared expert) runs again at the start of
// its backward, alone and with layernorm and moe_act beside it. The shared_experts module, alone
// and nested in moe's checkpoint.
TEST_CASE("the moe and shared_experts modules reproduce the reference", "[cpu_executor][moe]") {
    const std::vector<MoeCase> cases = selective_module_cases();
    enum class Set { Moe, MoeLayernormMoeAct, Shared, MoeShared };
    for (const MoeCase& m : cases) {
        for (const Set set : {Set::Moe, Set::MoeLayernormMoeAct, Set::Shared, Set::MoeShared}) {
            Scenario sc = moe_scenario(m);
            const bool others = set == Set::MoeLayernormMoeAct, moe = set != Set::Shared;
            const bool shared = set == Set::Shared || set == Set::MoeShared;
            sc.parallel.recompute_modules = {true, false, others, others, false, moe, shared};
            INFO("t=" << m.base.t << " p=" << m.base.p << " schedule " << static_cast<int>(m.base.schedule)
                      << " modules " << static_cast<int>(set));
            const TaggedProgram tp = build(sc);
            check_agreement(execute(sc, tp, std::chrono::milliseconds(10000)));
            // The forward kept neither the experts' input nor their outputs: without the
            // recomputed expert FC1 the activation's backward has nothing to read; nor the shared
            // experts' FC1 output, which the shared_experts module writes again. (Nested in moe's
            // checkpoint, the executor keeps what the checkpoint's run computed, so it cannot tell
            // that the third run is needed; test_recompute_modules checks where it allocates.)
            if (moe) CHECK_FALSE(without_layer_op(sc, tp, "R.moe.expert_fc1").run.ok());
            if (set == Set::Shared) CHECK_FALSE(without_layer_op(sc, tp, "R.moe.shared_fc1").run.ok());
            if (!others) continue;
            // moe_act inside the checkpoint: its FC2 frees the activation's output again, so the
            // activation's second recomputation (before FC2's backward) is needed too.
            TaggedProgram second = tp;
            const std::uint32_t first = first_op(tp, 0, "R.moe.expert_act", true);
            erase_op(second, 0, first_op(tp, 0, "R.moe.expert_act", true, first + 1));
            CHECK_FALSE(execute(sc, second, std::chrono::milliseconds(2000)).run.ok());
        }
    }
}

// Zero-bubble schedules: each expert layer's backward as B (the input gradients through the
// combine, the experts and the dispatch) and a later W (the shared experts', the experts' and the
// router's weight gradients, which must still reach the expert-data reduction and the optimizer).
TEST_CASE("expert layers under ZB-H1, ZB-V and DualPipeV's split backward reproduce the reference", "[cpu_executor][moe]") {
    MoeCase h1{Case{1, 2, 2, Schedule::ZeroBubbleH1}};
    h1.ep = 2;
    h1.shared = 1;
    h1.dense_layers = 1;
    check_moe(h1);
    // Tensor and sequence parallelism: the W pass gathers LayerNorm 2's output again for the
    // shared FC1; expert tensor parallelism splits each expert's weight gradients.
    MoeCase sp{Case{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::None, true}};
    sp.ep = 2;
    sp.shared = 1;
    check_moe(sp);
    sp.ep = 1;
    sp.etp = 2;
    check_moe(sp);
    MoeCase recomputed = h1;
    recomputed.base.recompute = Recompute::Full;
    recomputed.base.zero = 1;
    check_moe(recomputed);
    MoeCase v{Case{1, 2, 2, Schedule::ZeroBubbleV}};
    v.base.v = 2;
    v.ep = 2;
    v.shared = 1;
    check_moe(v);
    MoeCase dual = v;  // DualPipeV, the schedule DeepSeek trains its expert models with
    dual.base.schedule = Schedule::DualPipeV;
    check_moe(dual);
}

TEST_CASE("context parallelism around the experts reproduces the reference", "[cpu_executor][moe]") {
    // Each context rank routes its s/c positions of every sequence; the expert group spans the
    // context group (ring) or the two replicas of a context rank (all-gather, d = 2).
    MoeCase ring{context(2, ContextMode::Ring)};
    ring.ep = 2;
    ring.shared = 1;
    check_moe(ring);
    MoeCase gather{context(2, ContextMode::AllGather, 1, 1, 2)};
    gather.ep = 2;
    gather.etp = 2;
    check_moe(gather);
}

TEST_CASE("the check fails when an expert exchange is missing", "[cpu_executor][moe]") {
    // ep = 2, etp = 2 over d = 4 replicas: expert-data groups of 1; edp case below.
    MoeCase m{Case{1, 1, 4}};
    m.ep = 2;
    m.etp = 2;
    for (const char* label : {"F.ep.alltoall_dispatch", "F.ep.alltoall_combine", "F.etp.allgather", "F.etp.reducescatter",
                              "B.ep.alltoall_dispatch", "B.ep.alltoall_combine", "B.etp.allgather", "B.etp.reducescatter"}) {
        const Outcome o = without(m, 0, label);
        INFO("without " << label << ": " << o.run.error << " worst gradient " << o.agreement.worst << " "
                        << o.agreement.grads);
        CHECK((!o.run.ok() || o.agreement.worst_of() > 1e-2));
        CHECK(o.run.error.find("deadlock") == std::string::npos);
    }
}

TEST_CASE("the check fails without the expert-data reduction", "[cpu_executor][moe]") {
    for (int zero : {0, 1}) {
        MoeCase m = expert_parallel(2, 4);
        m.base.zero = zero;
        const Outcome o = without(m, 0, zero ? "edp.reducescatter" : "edp.allreduce", Where::Edge);
        INFO("zero " << zero << ": " << o.run.error);
        REQUIRE_FALSE(o.run.ok());
        CHECK(o.run.error.find("expert-data") != std::string::npos);
    }
    // ZeRO-1 without the gather of the updated expert shards: replica 0 keeps stale experts.
    MoeCase m = expert_parallel(2, 4);
    m.base.zero = 1;
    const Outcome o = without(m, 0, "edp.allgather", Where::Edge);
    INFO(o.run.error);
    REQUIRE(o.run.ok());
    CHECK(o.agreement.weights > 1e-3);
}

TEST_CASE("the check fails without the all-reduce of the router's row-partial gradient", "[cpu_executor][moe]") {
    // Under sequence parallelism each tensor rank routes its own tokens: its router gradient is a
    // partial sum over them, completed by tp.grad_allreduce with the LayerNorms'.
    MoeCase m{Case{2, 1, 1, Schedule::OneFOneB, Recompute::None, true}};
    m.ep = 2;
    const Outcome o = without(m, 0, "tp.grad_allreduce", Where::Edge);
    INFO(o.run.error);
    REQUIRE(o.run.ok());
    INFO("worst gradient: " << o.agreement.worst);
    CHECK(o.agreement.grads > 1e-2);
}

TEST_CASE("the check fails when an expert layer's recomputation is missing", "[cpu_executor][moe]") {
    // Under full recomputation the forward keeps no routing weights: without the recomputed
    // top-k the un-permutation has none to weight the experts' outputs with.
    MoeCase m = expert_parallel(2, 2);
    m.base.recompute = Recompute::Full;
    const Outcome o = without(m, 0, "R.moe.router_topk");
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("needs RouteWeights") != std::string::npos);
}

TEST_CASE("ZB-H1 with experts fails the check without a deferred weight gradient or the W pass's gather",
          "[cpu_executor][moe]") {
    // The last stage defers its W passes: without one of its expert, router or shared-expert
    // weight gradients the layer's backward never completes.
    MoeCase m{Case{1, 2, 1, Schedule::ZeroBubbleH1}};
    m.shared = 1;
    for (const auto& [label, error] :
         {std::pair{"B.moe.expert_fc2.wgrad", "expert FC2 never computed"},
          std::pair{"B.moe.expert_fc1.wgrad", "expert FC1 never computed"},
          std::pair{"B.moe.router.wgrad", "the router never computed"},
          std::pair{"B.moe.shared_fc1.wgrad", "shared-expert FC1 never computed"}}) {
        const Outcome o = without(m, 1, label);
        INFO("without " << label << ": " << o.run.error);
        REQUIRE_FALSE(o.run.ok());
        CHECK(o.run.error.find(error) != std::string::npos);
    }
    // Sequence parallelism: the W pass gathers LayerNorm 2's output again for the shared FC1's
    // weight gradient; without that gather the GEMM has no input.
    MoeCase sp{Case{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::None, true}};
    sp.ep = 2;
    sp.shared = 1;
    TaggedProgram tp = build(moe_scenario(sp));
    const std::uint32_t gather = first_op(tp, 1, "B.moe.shared_fc2.wgrad", true) + 1;  // the op after it
    const std::string& gathered = tp.program.labels[tp.program.op_lists[1].ops[gather].label];
    INFO("the op after the shared FC2's weight gradient: " << gathered);
    REQUIRE(gathered.find("allgather") != std::string::npos);
    erase_op(tp, 1, gather);
    const Outcome o = run(sp, &tp, std::chrono::milliseconds(2000));
    INFO(o.run.error << " worst gradient " << o.agreement.worst);
    CHECK((!o.run.ok() || o.agreement.worst_of() > 1e-2));
}

// ZeRO-3 of an expert model: each layer's dense part is sharded over the data group and its routed
// experts over the expert-data group, each gathered before every pass and reduce-scattered after
// every backward over its own group (experts_fully_sharded). Every rank starts with NaN in the
// elements it does not own, so a gather over the wrong group, or a missing one, shows.
TEST_CASE("ZeRO-3 shards the routed experts over the expert-data group", "[cpu_executor][moe]") {
    MoeCase m = expert_parallel(2, 4);  // shard group 4, expert-data group 2
    m.base.zero = 3;
    m.shared = 1;
    m.dense_layers = 1;
    check_moe(m);
    // Tensor parallelism without data parallelism: only the experts are sharded (expert-data
    // group 2 of the tensor ranks), the dense part is whole on each rank.
    MoeCase experts_only{Case{2, 1, 1, Schedule::OneFOneB, Recompute::None, true}};
    experts_only.base.zero = 3;
    check_moe(experts_only);
    // Pipelined, recomputed (the R pass gathers again), and under ZB-H1 (W gathers nothing).
    MoeCase pipelined{Case{1, 2, 2, Schedule::OneFOneB, Recompute::Full}};
    pipelined.base.zero = 3;
    check_moe(pipelined);
    MoeCase h1{Case{1, 2, 4, Schedule::ZeroBubbleH1}};
    h1.base.zero = 3;
    h1.ep = 2;
    h1.shared = 1;
    check_moe(h1);
}

// Hybrid sharding of an expert model: each shard group of data ranks holds a whole copy of the
// state, its routed experts sharded over the expert-data ranks inside it (Layout::expert_shard_size),
// and each part's gradient shard is all-reduced with the other shard groups' copy after the last
// backward. 8 data ranks, shard groups of 4, expert degree 2: expert shards of 2, 2 copies.
MoeCase hybrid_experts() {
    MoeCase m = expert_parallel(2, 8);
    m.base.zero = 3;
    m.base.shard_group = 4;
    m.shared = 1;
    m.dense_layers = 1;
    return m;
}

TEST_CASE("ZeRO-3 hybrid sharding shards the routed experts inside each shard group", "[cpu_executor][moe]") {
    check_moe(hybrid_experts());
    // With tensor and sequence parallelism and expert tensor parallelism: t 2 x shard group 2 =
    // 4 ranks per copy, expert x expert_tensor = 2, so 2 expert shards; pipelined with 2 copies.
    MoeCase tp{Case{2, 2, 4, Schedule::OneFOneB, Recompute::None, true}};
    tp.base.zero = 3;
    tp.base.shard_group = 2;
    tp.etp = 2;
    check_moe(tp);
}

TEST_CASE("ZeRO-3 hybrid sharding of the experts fails the check without any one of its collectives",
          "[cpu_executor][moe]") {
    for (const auto& [label, error] :
         {std::pair{"F.fsdp.expert_allgather", "routed experts of layer"},
          std::pair{"B.fsdp.expert_allgather", "routed experts of layer"},
          std::pair{"B.fsdp.expert_reducescatter", "before the copies' all-reduce"},
          std::pair{"fsdp.expert_replica_allreduce", "or never all-reduced between the copies"},
          std::pair{"fsdp.replica_allreduce", "or never all-reduced between the copies"}}) {
        const Outcome o = without(hybrid_experts(), 0, label);
        INFO("without " << label << ": " << o.run.error);
        REQUIRE_FALSE(o.run.ok());
        CHECK(o.run.error.find(error) != std::string::npos);
    }
}

TEST_CASE("ZeRO-3 of the experts fails the check without an expert gather or reduce-scatter", "[cpu_executor][moe]") {
    MoeCase m = expert_parallel(2, 4);
    m.base.zero = 3;
    for (const auto& [label, error] : {std::pair{"F.fsdp.expert_allgather", "routed experts of layer"},
                                       std::pair{"B.fsdp.expert_allgather", "routed experts of layer"},
                                       std::pair{"B.fsdp.expert_reducescatter", "routed experts' gradient of layer"}}) {
        const Outcome o = without(m, 0, label);
        INFO("without " << label << ": " << o.run.error);
        REQUIRE_FALSE(o.run.ok());
        CHECK(o.run.error.find(error) != std::string::npos);
    }
}
