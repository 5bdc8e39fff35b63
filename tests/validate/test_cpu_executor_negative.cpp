// A program with one op removed, or sent to the wrong group or sub-batch, must fail the check:
// the CPU executor's agreement with the reference is what proves each op necessary.
#include "tests/validate/cpu_executor_cases.hpp"

using namespace cuboid;
using namespace cuboid::cpu;
using namespace cuboid::cpu::cases;

TEST_CASE("overlap chunks fail the check when sub-batches are not tagged", "[cpu_executor]") {
    const Scenario sc = scenario_of(overlapped(2, 1, 2, false));
    TaggedProgram tp = build(sc);
    const auto& tags = tp.tags[0];
    REQUIRE(std::any_of(tags.begin(), tags.end(), [](const OpTag& t) { return t.sub_chunk == 1; }));
    for (OpTag& tag : tp.tags[0]) tag.sub_chunk = tag.sub_chunk >= 0 ? 0 : -1;  // every op on sub-batch 0
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("layer input") != std::string::npos);  // sub-batch 0 takes its rows twice
}

TEST_CASE("overlap chunks fail the check when a reduction carries another sub-batch's rows", "[cpu_executor]") {
    const Scenario sc = scenario_of(overlapped(2, 1, 2, false));
    TaggedProgram tp = build(sc);
    // The projection all-reduces of layer 0's two sub-batches; the second is made to depend on the
    // first sub-batch's projection, so sub-batch 1 never receives its sum.
    sim::OpList& ol = tp.program.op_lists[0];
    std::vector<std::uint32_t> reductions;
    for (std::uint32_t i = 0; i < ol.ops.size() && reductions.size() < 2; ++i)
        if (tp.program.labels[ol.ops[i].label] == "F.tp.allreduce" && tp.tags[0][i].layer == 0) reductions.push_back(i);
    REQUIRE(reductions.size() == 2);
    REQUIRE(tp.tags[0][reductions[1]].sub_chunk == 1);
    REQUIRE(ol.ops[reductions[1]].dep_count == 1);
    ol.deps[ol.ops[reductions[1]].first_dep] = ol.deps[ol.ops[reductions[0]].first_dep];
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("ProjRed") != std::string::npos);
}

TEST_CASE("tensor modes fail the check when a mesh collective is missing", "[cpu_executor]") {
    {  // ATP: the first layer's LayerNorm statistic all-reduce over the hidden axis
        const Scenario sc = scenario_of(atp(1, 1, AtpOrder::ColumnFirst));
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, first_op(tp, 0, "F.tp.allreduce", true));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find("needs Ln1") != std::string::npos);  // normalised only once the totals arrive
    }
    // ATP's token split (b = 2): the first layer's reduce-scatter of QKV's partial output, its
    // all-gather of the attention context before the projection, and in the backward the
    // all-gather of the QKV gradient before QKV's backward GEMMs.
    // Without the reduce-scatter, F.qk finds Q or K missing: which one it checks first depends on
    // when the other ranks' pieces arrive (threads), so either names the missing collective.
    for (const auto& [label, skip, error, or_error] :
         {std::tuple{"F.tp.reducescatter", 0, "needs K", "needs Q"},
          std::tuple{"F.tp.allgather", 0, "needs CtxFull", "needs CtxFull"},
          std::tuple{"B.tp.allgather", 1, "needs DQkvFull", "needs DQkvFull"}}) {
        const Scenario sc = scenario_of(atp(1, 1, AtpOrder::RowFirst, Recompute::None, 2));
        TaggedProgram tp = build(sc);
        std::uint32_t at = first_op(tp, 0, label, true);
        for (int k = 0; k < skip; ++k) {  // the (skip+1)-th in a layer: the MLP's gather comes first
            const auto& ops = tp.program.op_lists[0].ops;
            do ++at; while (at < ops.size() && (tp.program.labels[ops[at].label] != label || tp.tags[0][at].layer < 0));
            REQUIRE(at < ops.size());
        }
        erase_op(tp, 0, at);
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(label << ": " << o.run.error);
        CHECK((o.run.error.find(error) != std::string::npos || o.run.error.find(or_error) != std::string::npos));
    }
    {  // 2d: the first SUMMA broadcast of the first layer's QKV input
        const Scenario sc = scenario_of(two_d(1, 1));
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, first_op(tp, 0, "F.tp.broadcast", true));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find("broadcast") != std::string::npos);
    }
}

namespace {

// The first op of layer 0 with `label` tagged with chunk `chunk`.
std::uint32_t chunk_op(const TaggedProgram& tp, const std::string& label, int chunk) {
    const auto& ops = tp.program.op_lists[0].ops;
    for (std::uint32_t i = 0; i < ops.size(); ++i)
        if (tp.program.labels[ops[i].label] == label && tp.tags[0][i].layer == 0 && tp.tags[0][i].sub_chunk == chunk) return i;
    FAIL("no op " << label << " of chunk " << chunk);
    return 0;
}

}  // namespace

// ATP's chunks (b = 2, 2 chunks): each chunk's collectives carry only its rows, so removing one
// chunk's leaves that chunk's result absent although the other chunk's arrived.
TEST_CASE("ATP's overlap chunks fail the check when one chunk's collective is missing", "[cpu_executor]") {
    const Scenario sc = scenario_of(atp(1, 1, AtpOrder::RowFirst, Recompute::None, 2, 2));
    constexpr const char* kChunk1Attention = "'F.qk' (layer 0, micro-batch 0, sub-batch 1)";
    for (const auto& [label, chunk, error] : {std::tuple{"F.tp.reducescatter", 1, kChunk1Attention},  // QKV's sums
                                             std::tuple{"F.tp.allgather", 0, "needs CtxFull"},   // attention context
                                             std::tuple{"F.tp.allreduce", 1, "needs ProjRed"},   // projection's sums
                                             std::tuple{"B.tp.allgather", 0, "needs DA1Full"},   // GeLU's input gradient
                                             std::tuple{"B.tp.allreduce", 1, "needs DLn2"}}) {  // FC1's input gradient
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, chunk_op(tp, label, chunk));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(label << " of chunk " << chunk << ": " << o.run.error);
        CHECK(o.run.error.find(error) != std::string::npos);
    }
}

TEST_CASE("ATP's overlap chunks fail the check when the chunks are not told apart", "[cpu_executor]") {
    const Scenario sc = scenario_of(atp(1, 1, AtpOrder::ColumnFirst, Recompute::None, 4, 2));
    {  // every chunk's ops on chunk 0: its rows are computed twice, chunk 1's never
        TaggedProgram tp = build(sc);
        REQUIRE(std::any_of(tp.tags[0].begin(), tp.tags[0].end(), [](const OpTag& t) { return t.sub_chunk == 1; }));
        for (OpTag& tag : tp.tags[0]) tag.sub_chunk = std::min(tag.sub_chunk, 0);
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find("produced twice") != std::string::npos);
    }
}

// b = 2: a device's one sequence is split by positions, so chunk 1's queries attend to chunk 0's
// keys. Visiting the chunks in forward order in the backward finishes chunk 0's QKV gradient before
// chunk 1 sends its share of chunk 0's key and value gradients, which then reaches no key.
TEST_CASE("ATP's overlap chunks fail the check when the backward visits them in forward order", "[cpu_executor]") {
    const Scenario sc = scenario_of(atp(1, 1, AtpOrder::RowFirst, Recompute::None, 2, 2));
    TaggedProgram tp = build(sc);
    const sim::OpList& ol = tp.program.op_lists[0];
    for (std::uint32_t i = 0; i < ol.ops.size(); ++i) {
        OpTag& tag = tp.tags[0][i];
        if (tag.sub_chunk >= 0 && tp.program.labels[ol.ops[i].label].rfind("B.", 0) == 0) tag.sub_chunk = 1 - tag.sub_chunk;
    }
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("never reached its keys") != std::string::npos);
}

TEST_CASE("the check fails when a collective is missing", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{2, 1, 1});
    TaggedProgram tp = build(sc);
    erase_op(tp, 0, first_op(tp, 0, "F.tp.allreduce", true));  // the first layer's projection all-reduce
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("ProjRed") != std::string::npos);
}

TEST_CASE("the check fails when a recomputation is missing", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{1, 1, 1, Schedule::OneFOneB, Recompute::Selective});
    TaggedProgram tp = build(sc);
    erase_op(tp, 0, first_op(tp, 0, "R.softmax"));
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    CHECK(o.run.error.find("Probs") != std::string::npos);
}

TEST_CASE("the check fails when a gradient reduction uses the wrong group", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{1, 1, 2});
    TaggedProgram tp = build(sc);
    // With t = 1 the tensor group is the rank alone: the replicas' gradients are never summed.
    tp.program.op_lists[0].ops[first_op(tp, 0, "dp.allreduce")].group_slot = slot::kTensor;
    const Outcome o = execute(sc, tp);
    REQUIRE(o.run.ok());
    CHECK(o.agreement.grads > 1e-2);
}

TEST_CASE("the check fails when a pipeline message is lost", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{1, 2, 1});
    TaggedProgram tp = build(sc);
    erase_op(tp, 0, first_op(tp, 0, "pp.send_act"));
    Outcome o;
    {
        const Layout l = validate_plan(sc);
        const GptDims d = GptDims::of(sc.model);
        ExecutorOptions opt;
        opt.timeout = std::chrono::milliseconds(300);  // the receiver waits forever: a deadlock
        o.run = execute_program(sc, l, tp, init_params(d, 7), make_batch(d, sc.training.global_batch, 11), opt);
    }
    REQUIRE_FALSE(o.run.ok());
}

TEST_CASE("the check fails without the all-reduce of the row-partial gradients", "[cpu_executor]") {
    const auto fails = [](const Outcome& o) {
        REQUIRE(o.run.ok());
        INFO("worst gradient: " << o.agreement.worst);
        CHECK(o.agreement.grads > 1e-2);
    };
    fails(without_op(sequence_parallel(), "tp.grad_allreduce"));
    fails(without_op(two_d(1, 1), "tp.grad_allreduce"));
    fails(without_op(three_d(), "tp.grad_allreduce"));     // hidden-block bucket over axis 0
    fails(without_op(three_d(), "tp.grad_allreduce", 2));  // QKV / FC1 biases over axis 1
}

TEST_CASE("the check fails without the gathers and statistics of the model's ends", "[cpu_executor]") {
    const auto stops = [](const Outcome& o, const std::string& what) {
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find(what) != std::string::npos);
    };
    // Sequence parallelism: the logits weight gradient needs the final LayerNorm output gathered again.
    stops(without_op(sequence_parallel(), "B.tp.allgather"), "needs LnfFull");
    // 2d and 3d: the final LayerNorm normalises its block only once the row statistics are summed.
    stops(without_op(two_d(1, 1), "F.tp.allreduce"), "needs Lnf");
    stops(without_op(three_d(), "F.tp.allreduce"), "needs Lnf");
    // ... and its input gradient once the gradient's row sums are.
    stops(without_op(two_d(1, 1), "B.tp.allreduce"), "output gradient at layer position 4");
    // ATP: the head and the embedding need the whole hidden size.
    stops(without_op(atp(1, 1, AtpOrder::ColumnFirst), "F.tp.allgather"), "final LayerNorm input not gathered");
    stops(without_op(atp(1, 1, AtpOrder::ColumnFirst), "B.tp.allgather"), "embedding gradient not gathered");
}

// Tied embeddings with p > 1: without the first/last-stage all-reduce the first stage updates the
// word embedding with the lookup's gradient only and the last stage its copy with the output
// layer's only, so both gradients are off by O(1) (and the two copies drift apart).
TEST_CASE("the check fails without the tied embedding's all-reduce", "[cpu_executor]") {
    for (const Case& c : {Case{1, 2, 1}, Case{2, 2, 2, Schedule::OneFOneB, Recompute::None, false, 1}}) {
        const Scenario sc = scenario_of(c);
        TaggedProgram tp = build(sc);
        const std::size_t last = tp.program.op_lists.size() - 1;
        for (std::size_t list : {std::size_t{0}, last}) erase_op(tp, list, first_edge_op(tp, list, "emb.grad_allreduce"));
        const Outcome o = execute(sc, tp);
        REQUIRE(o.run.ok());
        INFO("worst gradient: " << o.agreement.worst);
        CHECK(o.agreement.grads > 1e-2);
        CHECK(o.agreement.worst.find("w") == 0);  // wemb or wout
    }
}

// ZeRO-3: each of its collectives is necessary. Without a unit's gather its kernels find only a
// shard; without a reduce-scatter or the copies' all-reduce the step misses gradient.
TEST_CASE("ZeRO 3 fails the check without any one of its collectives", "[cpu_executor]") {
    Case hybrid{1, 2, 4, Schedule::OneFOneB, Recompute::None, false, 3};
    hybrid.shard_group = 2;
    for (const auto& [label, in_layer, error] :
         {std::tuple{"F.fsdp.allgather", false, "not gathered for this forward"},
          std::tuple{"F.fsdp.allgather", true, "not gathered for this forward"},
          std::tuple{"B.fsdp.allgather", true, "not gathered for this backward"},
          std::tuple{"B.fsdp.reducescatter", true, "reduce-scattered for 3 of 4 micro-batches"},
          std::tuple{"fsdp.replica_allreduce", true, "never all-reduced between the copies"}}) {
        const Scenario sc = scenario_of(hybrid);
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, first_op(tp, 0, label, in_layer));
        const Outcome o = execute(sc, tp);
        INFO(label << (in_layer ? " (layer)" : " (embedding)") << ": " << o.run.error);
        REQUIRE_FALSE(o.run.ok());
        CHECK(o.run.error.find(error) != std::string::npos);
    }
}

// ZB-H1's W pass runs the linears' weight gradients after B: without one of them the layer's
// backward never completes, and without a B op the next B op misses its input.
TEST_CASE("ZB-H1 fails the check when a weight- or input-gradient op is missing", "[cpu_executor]") {
    for (const auto& [label, error] : {std::pair{"B.fc2.wgrad", "weight gradient of FC2 never computed"},
                                       std::pair{"B.qkv.wgrad", "weight gradient of QKV never computed"},
                                       std::pair{"B.fc2.dgrad", "needs DG1"},
                                       std::pair{"B.qkv.dgrad", "needs DLn1"}}) {
        const Scenario sc = scenario_of(Case{1, 2, 1, Schedule::ZeroBubbleH1});
        TaggedProgram tp = build(sc);
        erase_op(tp, 1, first_op(tp, 1, label, true));  // the last stage: its W passes are deferred
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(label << ": " << o.run.error);
        CHECK(o.run.error.find(error) != std::string::npos);
    }
}

TEST_CASE("ZB-V fails the check when a weight gradient or a message back up the V is missing", "[cpu_executor]") {
    Case c{1, 2, 1, Schedule::ZeroBubbleV};
    c.v = 2;
    const Scenario sc = scenario_of(c);
    {
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, first_op(tp, 0, "B.fc1.wgrad", true));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find("weight gradient of FC1 never computed") != std::string::npos);
    }
    {  // stage 1's chunk 1 sends its output back to stage 0, where the head waits for it
        TaggedProgram tp = build(sc);
        erase_op(tp, 1, first_op(tp, 1, "pp.send_act"));
        const Layout l = validate_plan(sc);
        const GptDims d = GptDims::of(sc.model);
        ExecutorOptions opt;
        opt.timeout = std::chrono::milliseconds(300);  // the head's stage waits forever: a deadlock
        const Execution run = execute_program(sc, l, tp, init_params(d, 7), make_batch(d, sc.training.global_batch, 11), opt);
        REQUIRE_FALSE(run.ok());
    }
}

// DualPipeV runs some weight gradients at once and defers others to its W steps: a missing one of
// either kind fails the check (stage 0's first B of chunk 1 is deferred, W right after it in step
// 3; stage 1's first is not).
TEST_CASE("DualPipeV fails the check when an immediate or a deferred weight gradient is missing", "[cpu_executor]") {
    Case c{1, 2, 1, Schedule::DualPipeV};
    c.v = 2;
    const Scenario sc = scenario_of(c);
    for (std::size_t stage : {0, 1}) {
        TaggedProgram tp = build(sc);
        erase_op(tp, stage, first_op(tp, stage, "B.fc2.wgrad", true));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO("stage " << stage << ": " << o.run.error);
        CHECK(o.run.error.find("weight gradient of FC2 never computed") != std::string::npos);
    }
}
