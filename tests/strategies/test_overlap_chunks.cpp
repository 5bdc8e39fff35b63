// Merak's sub-pipelined tensor parallelism (parallel.overlap_chunks, seed_algorithms §1.3).
#include <catch2/catch.hpp>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "sim/memory.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// A GPT block large enough that GEMMs and tensor all-reduces both take real time (t = 4 on
// NVLink), two micro-batch sequences so k = 2 cuts along the batch as Merak does.
Scenario tp_scenario(int p, int k) {
    Scenario sc = test::tiny_scenario(4, p, 1, 8, 4);
    sc.model.hidden = 2048;
    sc.model.heads = 16;
    sc.model.seq_len = 1024;
    sc.model.vocab = 32000;
    sc.training.micro_batch = 4;
    sc.training.global_batch = 32;
    sc.parallel.partition = PartitionMethod::Uniform;
    sc.parallel.overlap_chunks = k;
    return sc;
}

RunResult run(const Scenario& sc) {
    static const auto hardware = hw::Hardware::build(tp_scenario(1, 1).cluster, hw::Catalog::load_builtin());
    return run_scenario(sc, RunOptions{.hardware = hardware});
}

}  // namespace

TEST_CASE("overlap_chunks: k = 1 builds the program of plain 1d tensor parallelism") {
    // Program identity: the ops of a layer and their order do not depend on the sub-batch code
    // path when k = 1; the default (absent key) is 1, so two runs must agree bit for bit.
    Scenario a = tp_scenario(1, 1);
    const RunResult r1 = run(a);
    const RunResult r2 = run(a);
    CHECK(r1.fingerprint == r2.fingerprint);
    const sim::Program prog = build_program(a, validate_plan(a));
    // Per layer and micro-batch without sequence parallelism: 2 forward and 2 backward all-reduces.
    std::size_t allreduces = 0;
    for (const auto& op : prog.op_lists[0].ops)
        if (op.kind == sim::OpKind::AllReduce && op.category == comm_class::kTensor) ++allreduces;
    // + per micro-batch the embedding's all-reduce, the cross-entropy's three (max, target
    // logit, sum of exponentials) and the logits' input gradient (edge_ops.hpp).
    const std::size_t m = 8, layers = 4;
    CHECK(allreduces == m * (4 * layers + 5));
}

TEST_CASE("overlap_chunks: k sub-batches keep the FLOPs, multiply the collectives and hide them") {
    const Scenario one = tp_scenario(1, 1);
    for (int k : {2, 4}) {
        const Scenario split = tp_scenario(1, k);
        const sim::Program a = build_program(one, validate_plan(one));
        const sim::Program b = build_program(split, validate_plan(split));
        // The same GEMM work, cut into k times as many layer GEMMs.
        CHECK(program_gemm_flops(b) == Approx(program_gemm_flops(a)).epsilon(1e-12));
        // Stored activations: the k sub-batches keep what the micro-batch keeps.
        CHECK(sim::peak_memory(b.op_lists[0]).peak.value ==
              Approx(sim::peak_memory(a.op_lists[0]).peak.value).epsilon(1e-9));
        const RunResult ra = run(one), rb = run(split);
        INFO("k = " << k << " exposed tp comm " << ra.breakdown.tp_comm_exposed_s << " -> "
                    << rb.breakdown.tp_comm_exposed_s);
        CHECK(rb.breakdown.tp_comm_exposed_s < ra.breakdown.tp_comm_exposed_s);
        CHECK(rb.hardware_flops_per_iteration == Approx(ra.hardware_flops_per_iteration));
    }
}

TEST_CASE("overlap_chunks: smaller GEMMs cost more per FLOP") {
    // Without tensor parallelism there is nothing to hide, so k = 2 can only add time: each GEMM
    // has half the rows, lower efficiency on the shape-dependent model, and twice the launches.
    Scenario one = tp_scenario(1, 1);
    one.parallel.tensor = 1;
    one.cluster.gpus_per_node = 1;
    Scenario two = one;
    two.parallel.overlap_chunks = 2;
    const auto hardware = hw::Hardware::build(one.cluster, hw::Catalog::load_builtin());
    CHECK(run_scenario(two, RunOptions{.hardware = hardware}).breakdown.compute_s >
          run_scenario(one, RunOptions{.hardware = hardware}).breakdown.compute_s);
}

TEST_CASE("overlap_chunks: no deadlock with every schedule and recompute policy") {
    struct Case {
        Schedule schedule;
        Recompute recompute;
        int v;
        bool sp;
    };
    for (const Case& c : {Case{Schedule::OneFOneB, Recompute::Full, 1, false},
                          Case{Schedule::GPipe, Recompute::Selective, 1, true},
                          Case{Schedule::ShiftedCriticalPath, Recompute::StageAware, 1, false},
                          Case{Schedule::ShiftedCriticalPath, Recompute::Full, 1, true},
                          Case{Schedule::Interleaved, Recompute::None, 2, false}}) {
        Scenario sc = tp_scenario(4, 2);
        sc.model.layers = 8;
        sc.parallel.schedule = c.schedule;
        sc.parallel.recompute = c.recompute;
        sc.parallel.virtual_stages = c.v;
        sc.parallel.sequence_parallel = c.sp;
        const auto hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
        const RunResult r = run_scenario(sc, RunOptions{.hardware = hardware});
        CHECK(r.iteration_time_s > 0.0);  // simulate throws on a deadlock
    }
}

TEST_CASE("overlap_chunks: k must divide the micro-batch or the sequence") {
    Scenario sc = tp_scenario(1, 3);  // b = 4, s = 1024: neither divisible by 3
    try {
        validate_plan(sc);
        FAIL("k = 3 accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("overlap_chunks") != std::string::npos);
    }
    sc.parallel.overlap_chunks = 8;  // 8 | 1024: a cut along the sequence
    CHECK_NOTHROW(validate_plan(sc));
}
