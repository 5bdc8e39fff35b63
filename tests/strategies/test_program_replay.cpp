// The stage builder emits each kind of layer once and replays it after (OpRun, op_emitter.hpp).
// A tagged build emits every layer directly, so the two builds of one plan must give the same
// program, op for op and dependency for dependency.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/program.hpp"
#include "strategies/layout.hpp"
#include "strategies/op_emitter.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// Every field of two ops, compared exactly (the program is also what the GPU executor runs).
void check_same_op(const sim::Op& a, const sim::Op& b) {
    CHECK(a.kind == b.kind);
    CHECK(a.category == b.category);
    CHECK(a.precision == b.precision);
    CHECK(a.stream == b.stream);
    CHECK(a.group_slot == b.group_slot);
    CHECK(a.label == b.label);
    CHECK(a.first_dep == b.first_dep);
    CHECK(a.dep_count == b.dep_count);
    CHECK(a.flops.value == b.flops.value);
    CHECK(a.bytes.value == b.bytes.value);
    CHECK(a.shape.m == b.shape.m);
    CHECK(a.shape.n == b.shape.n);
    CHECK(a.shape.k == b.shape.k);
    CHECK(a.shape.batch == b.shape.batch);
    CHECK(a.memory_alloc.value == b.memory_alloc.value);
    CHECK(a.memory_free.value == b.memory_free.value);
}

void check_same_list(const sim::OpList& a, const sim::OpList& b) {
    REQUIRE(a.ops.size() == b.ops.size());
    CHECK(a.deps == b.deps);
    CHECK(a.resident.value == b.resident.value);
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        INFO("op " << i);
        check_same_op(a.ops[i], b.ops[i]);
    }
}

// The replayed build (build_program) against the directly emitted one (build_tagged_program),
// built on one thread and on several.
void check_replay(const Scenario& sc) {
    const Layout l = validate_plan(sc);
    const sim::Program replayed = build_program_checkpointing(sc, l, checkpointed_layers(sc, l), 1);
    const sim::Program parallel = build_program_checkpointing(sc, l, checkpointed_layers(sc, l), 3);
    const TaggedProgram direct = build_tagged_program(sc, l);
    REQUIRE(replayed.op_lists.size() == direct.program.op_lists.size());
    CHECK(replayed.labels == direct.program.labels);
    for (std::size_t s = 0; s < replayed.op_lists.size(); ++s) {
        INFO("stage " << s);
        // More ops than one layer's: the replay was used (a stage runs many layer passes).
        CHECK(replayed.op_lists[s].ops.size() > 100);
        check_same_list(replayed.op_lists[s], direct.program.op_lists[s]);
        check_same_list(parallel.op_lists[s], direct.program.op_lists[s]);
    }
}

}  // namespace

TEST_CASE("replayed layers give the program that emitting every layer gives", "[strategies][replay]") {
    SECTION("schedules") {
        for (const Schedule s : {Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved}) {
            INFO("schedule " << to_string(s));
            check_replay(test::cluster_scenario(2, 2, 1, 1, s));
        }
    }
    SECTION("recompute policies, sequence parallelism, fp8") {
        for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
            INFO("recompute " << to_string(r));
            Scenario sc = test::tiny_scenario(2, 2, 2, 4);
            sc.parallel.recompute = r;
            sc.parallel.sequence_parallel = r == Recompute::Selective;
            sc.training.precision = r == Recompute::Full ? sim::Precision::Fp8 : sim::Precision::Bf16;
            check_replay(sc);
        }
    }
    SECTION("shifted critical path (stage-level recompute passes, deferred sends)") {
        Scenario sc = test::tiny_scenario(2, 4, 1, 8, 8);
        sc.parallel.schedule = Schedule::ShiftedCriticalPath;
        sc.parallel.recompute = Recompute::Full;
        check_replay(sc);
        sc.parallel.scp_whole_stage_recompute = false;
        check_replay(sc);
    }
    SECTION("sub-pipelined tensor parallelism (overlap_chunks 2)") {
        Scenario sc = test::tiny_scenario(2, 2, 1, 4);
        sc.training.micro_batch = 2;
        sc.training.global_batch = 8;
        sc.parallel.overlap_chunks = 2;
        check_replay(sc);
    }
    SECTION("2d and 3d tensor modes") {
        for (const TensorMode mode : {TensorMode::TwoD, TensorMode::ThreeD}) {
            INFO("tensor mode " << static_cast<int>(mode));
            Scenario sc = test::tiny_scenario(mode == TensorMode::TwoD ? 4 : 8, 2, 1, 4);
            sc.model.heads = 8;
            sc.training.micro_batch = 4;
            sc.training.global_batch = 16;
            sc.parallel.tensor_mode = mode;
            check_replay(sc);
        }
    }
}

TEST_CASE("an op run names the emitter's start state by position, its own ops by offset", "[strategies][replay]") {
    // Direct: two ops before (a compute op 0 and a communication op 1 the next compute waits
    // for), then the emission: compute 2 (deps {1}), comm 3 after the start's last compute 0 and
    // op 2, compute 4 waiting for 3.
    const auto emission = [](OpEmitter& e, std::uint32_t start_last) {
        const std::uint32_t a = e.compute(memory_op(sim::OpKind::LayerNorm, 7, 10.0, sim::OpCategory::Compute));
        const std::uint32_t c = e.comm(comm_op(sim::OpKind::AllReduce, 8, 20.0, stream::kTensorComm, 0,
                                               comm_class::kTensor),
                                       std::vector<std::uint32_t>{start_last, a});
        e.wait_for(c);
        e.compute(memory_op(sim::OpKind::Softmax, 9, 30.0, sim::OpCategory::Compute));
    };
    const auto start = [](OpEmitter& e) {
        const std::uint32_t last = e.compute(memory_op(sim::OpKind::Elementwise, 1, 1.0, sim::OpCategory::Compute));
        e.wait_for(e.comm(comm_op(sim::OpKind::Recv, 2, 2.0, stream::kPipelineRecv, 3, comm_class::kPipeline),
                          kNoOp));
        return last;
    };
    sim::OpList list;
    OpEmitter e(list, sim::Precision::Bf16);
    start(e);
    const OpEmitter::Mark mark = e.mark();
    emission(e, 0);
    OpRun run;
    REQUIRE(e.record(mark, run));
    CHECK(run.start_pending == 1);
    CHECK(run.start_last);
    // The emission's dependencies: op 2 on the start's pending op (position 0), op 3 on the
    // start's last compute op (position 1, after the one pending op) and on op 2 (offset 0),
    // op 4 on op 3 (offset 1).
    CHECK(run.deps == std::vector<std::uint32_t>{OpRun::kFromStart | 0, OpRun::kFromStart | 1, 0, 1});
    CHECK(run.last_compute == 2);  // op 4 is the run's third op

    // Again after a second start (ops 5 and 6): replayed, and emitted directly on a second list.
    start(e);
    REQUIRE(e.can_replay(run));
    e.replay(run);
    sim::OpList direct_list;
    OpEmitter direct(direct_list, sim::Precision::Bf16);
    emission(direct, start(direct));
    emission(direct, start(direct));
    check_same_list(list, direct_list);
    CHECK(e.last_compute() == direct.last_compute());
    CHECK(e.pending_count() == 0);
    // Ops 7, 8, 9 wait for op 6, then 5 and 7, then 8.
    CHECK(std::vector<std::uint32_t>(list.deps.end() - 4, list.deps.end()) == std::vector<std::uint32_t>{6, 5, 7, 8});
    // Without the start's pending op the run does not fit.
    e.comm(comm_op(sim::OpKind::Send, 4, 1.0, stream::kPipelineSend, 4, comm_class::kPipeline), kNoOp);
    CHECK_FALSE(e.can_replay(run));
}

TEST_CASE("an op run is not recorded when a dependency is not part of the start state", "[strategies][replay]") {
    sim::OpList list;
    OpEmitter e(list, sim::Precision::Bf16);
    const std::uint32_t early = e.compute(memory_op(sim::OpKind::Elementwise, 1, 1.0, sim::OpCategory::Compute));
    e.compute(memory_op(sim::OpKind::Elementwise, 2, 1.0, sim::OpCategory::Compute));
    const OpEmitter::Mark mark = e.mark();
    // Depends on op 0, which is neither pending nor the last compute op at the mark.
    e.comm(comm_op(sim::OpKind::AllReduce, 3, 1.0, stream::kTensorComm, 0, comm_class::kTensor), early);
    OpRun run;
    CHECK_FALSE(e.record(mark, run));
}
