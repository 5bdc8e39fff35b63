// The 2d, 3d and atp programs simulate end to end (no deadlock: every member of every axis group
// issues the same collectives in the same order) with pipeline and data parallelism.
#include <catch2/catch.hpp>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/model_math.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// t GPUs per node (one tensor group per node), p = 2, d = 2: 4 nodes.
Scenario mode_scenario(TensorMode mode, int t, int micro_batch) {
    Scenario sc = test::tiny_scenario(t, 2, 2, 4, 4);
    sc.model.hidden = 128;
    sc.model.heads = 8;
    sc.cluster.nodes = 4;
    sc.cluster.gpus_per_node = t;
    sc.training.micro_batch = micro_batch;
    sc.training.global_batch = 4 * micro_batch * 2;
    sc.parallel.tensor_mode = mode;
    return sc;
}

RunResult run(const Scenario& sc) {
    const auto hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    return run_scenario(sc, RunOptions{.hardware = hardware});
}

void check_sane(const Scenario& sc, const RunResult& r) {
    CHECK(r.iteration_time_s > 0.0);
    // The model FLOPs do not depend on the mode; the tensor-parallel communication is real.
    CHECK(r.model_flops_per_iteration == Approx(model_flops_per_iteration(sc.model, sc.training.global_batch)));
    CHECK(r.breakdown.tp_comm_exposed_s > 0.0);
}

}  // namespace

TEST_CASE("2d (t=4), 3d (t=8) and atp (t=4, 8) simulate with p=2, d=2") {
    SECTION("2d") {
        const Scenario sc = mode_scenario(TensorMode::TwoD, 4, 2);
        check_sane(sc, run(sc));
    }
    SECTION("3d with full recompute") {
        Scenario sc = mode_scenario(TensorMode::ThreeD, 8, 4);
        sc.parallel.recompute = Recompute::Full;
        check_sane(sc, run(sc));
    }
    SECTION("atp 2x2 and 4x2 row-first, with chunks and selective recompute") {
        Scenario sc = mode_scenario(TensorMode::Atp, 4, 2);
        sc.parallel.atp_mesh = {2, 2};
        check_sane(sc, run(sc));
        Scenario eight = mode_scenario(TensorMode::Atp, 8, 2);
        eight.parallel.atp_mesh = {4, 2};
        eight.parallel.atp_order = AtpOrder::RowFirst;
        eight.parallel.overlap_chunks = 2;
        eight.parallel.recompute = Recompute::Selective;
        check_sane(eight, run(eight));
    }
}

TEST_CASE("atp chunk-based overlap hides tensor-parallel communication") {
    // GEMMs large enough that a chunk's compute covers the previous chunk's all-reduce: 4
    // sequences of 1024 tokens, h = 4096, on a 2 x 4 mesh inside one 8-GPU node (p = 2, d = 1).
    Scenario sc = test::tiny_scenario(8, 2, 1, 4, 4);
    sc.model.hidden = 4096;
    sc.model.heads = 32;
    sc.model.seq_len = 1024;
    sc.model.vocab = 1024;
    sc.cluster.nodes = 2;
    sc.cluster.gpus_per_node = 8;
    sc.training.micro_batch = 4;
    sc.training.global_batch = 16;
    sc.parallel.tensor_mode = TensorMode::Atp;
    sc.parallel.atp_mesh = {2, 4};
    const RunResult one = run(sc);
    sc.parallel.overlap_chunks = 4;
    const RunResult four = run(sc);
    CHECK(four.breakdown.tp_comm_exposed_s < 0.5 * one.breakdown.tp_comm_exposed_s);
    // Smaller GEMMs run less efficiently (the compute model's shape-dependent efficiency).
    CHECK(four.breakdown.compute_s > one.breakdown.compute_s);
}
