// Symmetry folding of real plans (strategies/program_symmetry.hpp proposes, sim verifies): every
// rank's finish and breakdown, the makespan and the fingerprint equal the full simulation's.
#include <catch2/catch.hpp>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_symmetry.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

struct Runs {
    sim::SimResult full;
    sim::SimResult folded;
};

Runs both(const Scenario& sc) {
    const Layout layout = validate_plan(sc);
    const auto hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    const sim::Program program = build_program(sc, layout);
    const sim::ProgramCosts costs = hardware->price(program);
    Runs r;
    r.full = sim::simulate(program, costs, hardware->links(), *hardware->make_planner(program));
    sim::SimOptions options;
    options.fold = true;
    options.fold_generators = symmetry_generators(layout, sc.parallel.tensor_mode);
    r.folded = sim::simulate(program, costs, hardware->links(), *hardware->make_planner(program), {}, options);
    return r;
}

void check_same(const Runs& r) { test::check_same_outcome(r.folded, r.full); }

}  // namespace

TEST_CASE("1d plans fold over the tensor and data coordinates, with the full run's results",
          "[strategies][fold]") {
    for (const Schedule s : {Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved}) {
        INFO("schedule " << to_string(s));
        const Runs r = both(test::cluster_scenario(2, 2, 2, 1, s));
        // One orbit per pipeline stage: 8 ranks simulated as 2.
        CHECK(r.folded.folded);
        CHECK(r.folded.fold_factor == 4.0);
        CHECK(r.folded.events < r.full.events);
        check_same(r);
    }
}

TEST_CASE("multi-node fat-tree plans fold as far as the leaves allow", "[strategies][fold]") {
    SECTION("HDR leaves of 20 NICs split nodes: only the tensor coordinate folds") {
        // rank = tp + 4 (dp + 4 pp) on 4 nodes of 8 GPUs: a node holds replicas {0, 1} or {2, 3}
        // of one stage. HDR switches have 40 ports, 20 down (networks.yaml): node 2's NICs 16-23
        // straddle leaves 0 and 1, so no shift of the replicas maps the network onto itself; the
        // tensor shift (GPUs 0-3 and 4-7 each stay on their leaf) does: orbits of 4 ranks.
        const Runs r = both(test::cluster_scenario(4, 2, 4, 4));
        CHECK(r.folded.folded);
        CHECK(r.folded.fold_factor == 4.0);
        check_same(r);
    }
    SECTION("NDR leaves of 32 NICs hold 4 nodes: replicas fold too") {
        // Same plan at 400 Gb/s: radix 64, 32 NICs per leaf, all 4 nodes on one leaf. Shifting
        // the replicas by two maps node 0 onto node 1 (and 2 onto 3): orbits of 4 x 2 ranks. The
        // shift by one maps a ring hop inside a node onto one between nodes and fails.
        Scenario sc = test::cluster_scenario(4, 2, 4, 4);
        sc.cluster.nic_gbps = 400;
        const Runs r = both(sc);
        CHECK(r.folded.folded);
        CHECK(r.folded.fold_factor == 8.0);
        check_same(r);
    }
    SECTION("NDR, two leaves: t = 8, d = 8 on 8 nodes") {
        // One replica per node, nodes 0-3 on leaf 0 and 4-7 on leaf 1: the shift by four replicas
        // swaps the leaves; shifts by one or two map a hop inside a leaf onto one across the spine.
        // The data-parallel all-reduce of large gradients is a ring, invariant under the leaf
        // swap: orbits of 8 tensor ranks x 2 replicas.
        Scenario sc = test::cluster_scenario(8, 1, 8, 8);
        sc.model.hidden = 2048;
        sc.model.heads = 16;
        sc.cluster.nic_gbps = 400;
        const Runs r = both(sc);
        CHECK(r.folded.folded);
        CHECK(r.folded.fold_factor == 16.0);
        check_same(r);
        // Small gradients go by NCCL's tree (hardware.md 6.1), rooted at the group's first node:
        // no replica shift maps it onto itself, only the tensor coordinate folds. About 100 KB
        // per rank, where the ring's 14 network steps cost twice the tree's latency (at around a
        // megabyte NCCL's correction of tree bandwidth, nccl.yaml, already hands it to the ring).
        sc.model.hidden = 64;
        sc.model.heads = 8;
        const Runs tree = both(sc);
        CHECK(tree.folded.fold_factor == 8.0);
        check_same(tree);
    }
}

TEST_CASE("ZeRO and 2d tensor plans give the full run's results, folded or not", "[strategies][fold]") {
    Scenario zero = test::cluster_scenario(2, 2, 2, 1);
    zero.parallel.zero_stage = 1;
    check_same(both(zero));
    Scenario two_d = test::cluster_scenario(4, 1, 2, 1);
    two_d.parallel.tensor_mode = TensorMode::TwoD;
    two_d.training.micro_batch = 2;  // 2d splits a micro-batch's sequences over q = 2
    two_d.training.global_batch = 16;
    const Runs r = both(two_d);
    // 2d meshes are proposed the data shift only: at most d = 2 ranks per orbit.
    CHECK(r.folded.fold_factor <= 2.0);
    check_same(r);
}

TEST_CASE("an oversubscribed fat tree gives the full run's results, folded or not", "[strategies][fold]") {
    // 2:1 oversubscription: a leaf of radix R holds R x 2/3 NICs (topology.hpp), not a whole
    // number of 8-NIC nodes, so the 12 replicas (one node each) sit unevenly on the leaves.
    Scenario sc = test::cluster_scenario(8, 1, 12, 12);
    sc.model.heads = 8;
    sc.cluster.oversubscription = 2.0;
    check_same(both(sc));
}

TEST_CASE("proposed generators are permutations along the layout's coordinates", "[strategies][fold]") {
    Layout l;
    l.tensor = 2;
    l.data = 3;
    l.pipeline = 2;
    const auto gens = symmetry_generators(l, TensorMode::OneD);
    // Proper divisors: data 3 -> shift by 1; tensor 2 -> shift by 1 (no block of 1 < b < 2).
    REQUIRE(gens.size() == 2);
    // rank = tp + t * (dp + d * pp): the data shift moves rank 0 (tp 0, dp 0, pp 0) to dp 1 = rank 2,
    // and rank 4 (dp 2) back to dp 0 = rank 0; the tensor shift swaps ranks 0 and 1.
    CHECK(gens[0][0] == 2);
    CHECK(gens[0][4] == 0);
    CHECK(gens[1][0] == 1);
    CHECK(gens[1][1] == 0);
    CHECK(symmetry_generators(l, TensorMode::TwoD).size() == 1);
    // data 4: shifts by 1 and by 2 (a node's or leaf's worth of replicas may be 2).
    l.data = 4;
    CHECK(symmetry_generators(l, TensorMode::TwoD).size() == 2);
    // tensor 8: shifts by 1, 2, 4 and the shifts inside blocks of 2 and 4; block 4 maps
    // tp 3 -> 0 and tp 7 -> 4 (rank 7 is tp 7 of dp 0, pp 0).
    l.tensor = 8;
    const auto t8 = symmetry_generators(l, TensorMode::OneD);
    REQUIRE(t8.size() == 2 + 3 + 2);
    CHECK(t8.back()[3] == 0);
    CHECK(t8.back()[7] == 4);
}
