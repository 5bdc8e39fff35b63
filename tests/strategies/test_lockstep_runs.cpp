// Lockstep runs (sim/engine_lockstep.cpp) on real plans: with them on, every rank's finish and
// breakdown, the makespan, the flow count and the fingerprint equal the step-by-step execution's,
// and where tensor collectives run on links no other transfer uses meanwhile, far fewer events.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/host_dispatch.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_symmetry.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

struct Runs {
    sim::SimResult stepwise;
    sim::SimResult lockstep;
};

Runs both(const Scenario& sc, bool fold = false, const hw::HostDispatchCosts* host = nullptr) {
    const Layout layout = validate_plan(sc);
    const auto hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    sim::Program program = build_program(sc, layout);
    if (host != nullptr) program = with_host_dispatch(std::move(program), *host, pipeline_chunks(sc.parallel));
    const sim::ProgramCosts costs = hardware->price(program);
    sim::SimOptions options;
    options.fold = fold;
    if (fold) options.fold_generators = symmetry_generators(layout, sc.parallel.tensor_mode);
    Runs r;
    // The reference takes the flow network for every transfer and an event for every chain.
    options.exclusive_transfers = false;
    options.lockstep_runs = false;
    r.stepwise = sim::simulate(program, costs, hardware->links(), *hardware->make_planner(program), {}, options);
    options.exclusive_transfers = true;
    options.lockstep_runs = true;
    r.lockstep = sim::simulate(program, costs, hardware->links(), *hardware->make_planner(program), {}, options);
    return r;
}

void check_same(const Runs& r) {
    test::check_same_outcome(r.lockstep, r.stepwise);
    CHECK(r.lockstep.flows == r.stepwise.flows);
    CHECK(r.lockstep.events <= r.stepwise.events);
}

// The tiny GPT with tensor groups of 8 (a whole NVSwitch node each: their links are their own,
// so their all-reduces are exclusive) on `nodes` nodes.
Scenario node_tensor_scenario(int p, int d, int nodes, Schedule schedule = Schedule::OneFOneB) {
    Scenario sc = test::cluster_scenario(8, p, d, nodes, schedule);
    sc.model.heads = 8;
    return sc;
}

}  // namespace

TEST_CASE("lockstep runs of node-wide tensor groups give the step-by-step results with far fewer events",
          "[strategies][lockstep]") {
    for (const Schedule s : {Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved}) {
        INFO("schedule " << to_string(s));
        const Runs r = both(node_tensor_scenario(2, 2, 4, s));
        check_same(r);
        // Step by step, each all-reduce takes a latency and a flow event and each chain after it
        // an end-of-chain event per rank; a run takes one event for all of them. With 4 layers per
        // stage the forward of a stage is one run of 8 all-reduces; interleaving splits it into
        // chunks of 2 layers, between which the runs stop (pipeline transfers).
        if (s == Schedule::Interleaved) CHECK(r.lockstep.events < r.stepwise.events);
        else CHECK(r.lockstep.events * 2 < r.stepwise.events);
    }
}

TEST_CASE("lockstep runs give the step-by-step results under every overlap and recompute policy",
          "[strategies][lockstep]") {
    for (const bool dp_overlap : {true, false}) {
        for (const bool tp_backward_overlap : {true, false}) {
            for (const Recompute rc : {Recompute::None, Recompute::Full, Recompute::Selective}) {
                INFO("dp_overlap " << dp_overlap << ", tp_backward_overlap " << tp_backward_overlap << ", recompute "
                                   << to_string(rc));
                Scenario sc = node_tensor_scenario(2, 2, 4);
                sc.parallel.dp_overlap = dp_overlap;
                sc.parallel.tp_backward_overlap = tp_backward_overlap;
                sc.parallel.recompute = rc;
                check_same(both(sc));
            }
        }
    }
    SECTION("sequence parallelism, ZeRO, chunked overlap") {
        Scenario sp = node_tensor_scenario(2, 2, 4);
        sp.parallel.sequence_parallel = true;
        check_same(both(sp));
        Scenario zero = node_tensor_scenario(2, 2, 4);
        zero.parallel.zero_stage = 1;
        check_same(both(zero));
        Scenario chunks = node_tensor_scenario(2, 2, 4);
        chunks.parallel.overlap_chunks = 2;
        check_same(both(chunks));
    }
    SECTION("2d (2 x 2), 3d (2 x 2 x 2) and atp (8) tensor modes on one node") {
        // Their collectives run on row, column and depth groups of the mesh (several slots), so
        // runs stop where the slot changes.
        for (const TensorMode mode : {TensorMode::TwoD, TensorMode::ThreeD, TensorMode::Atp}) {
            INFO("tensor mode " << static_cast<int>(mode));
            Scenario sc = node_tensor_scenario(1, 1, 1);
            if (mode == TensorMode::TwoD) {
                sc.parallel.tensor = 4;
                sc.parallel.data = 2;
            }
            sc.parallel.tensor_mode = mode;
            sc.training.micro_batch = 4;  // 2d and 3d split a micro-batch's sequences over the mesh
            sc.training.global_batch = 16;
            check_same(both(sc));
        }
    }
}

TEST_CASE("lockstep runs compose with folding and with host dispatch", "[strategies][lockstep]") {
    const Runs folded = both(node_tensor_scenario(2, 4, 8), true);
    CHECK(folded.lockstep.folded);
    check_same(folded);
    // The host issues every op: chains wait for the host stream, so no run forms, and nothing
    // changes.
    const hw::HostDispatchCosts host{microseconds(20.0), microseconds(30.0), true, true};
    const Runs hosted = both(node_tensor_scenario(2, 2, 4), false, &host);
    check_same(hosted);
}

TEST_CASE("tensor groups that share NVLinks with data-parallel rings run in lockstep where nothing overlaps",
          "[strategies][lockstep]") {
    // t = 4 on 8-GPU nodes: each node holds two replicas, whose data-parallel all-reduce crosses
    // the NVLinks of the tensor groups. Only the tensor collectives of the last micro-batch's
    // backward pass can overlap a gradient reduction (sim/exclusive.hpp, conditions): the others
    // are exclusive while they run, and form runs.
    for (const bool dp_overlap : {true, false}) {
        INFO("dp_overlap " << dp_overlap);
        Scenario sc = test::cluster_scenario(4, 2, 4, 4);
        sc.parallel.dp_overlap = dp_overlap;
        const Runs r = both(sc);
        check_same(r);
        CHECK(r.lockstep.events * 2 < r.stepwise.events);
    }
}

TEST_CASE("lockstep runs give the step-by-step results over a spread of random plans", "[strategies][lockstep]") {
    // 100 plans drawn with a fixed seed (the same every run) from tensor {2, 4, 8} x pipeline
    // {1, 2, 4} x data {1, 2, 4} on 8-GPU nodes, micro-batch {1, 2}, schedule, recompute policy,
    // both overlaps, sequence parallelism: node-wide and shared tensor links, single and several
    // nodes, every way a run can start, stop or overlap.
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    const auto draw = [&state](std::uint64_t n) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // Knuth's MMIX LCG
        return static_cast<int>((state >> 33) % n);
    };
    int plans = 0;
    while (plans < 100) {
        const int t = 2 << draw(3);
        const int p = 1 << draw(3);
        const int d = 1 << draw(3);
        if (t * p * d < 8) continue;  // whole nodes
        const Schedule schedule = std::array{Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved}[draw(3)];
        if (schedule == Schedule::Interleaved && p == 1) continue;
        Scenario sc = test::cluster_scenario(t, p, d, t * p * d / 8, schedule);
        sc.model.heads = 8;
        sc.training.micro_batch = 1 + draw(2);
        sc.training.global_batch = 4 * d * sc.training.micro_batch;
        sc.parallel.recompute = std::array{Recompute::None, Recompute::Full, Recompute::Selective}[draw(3)];
        sc.parallel.dp_overlap = draw(2) == 1;
        sc.parallel.tp_backward_overlap = draw(2) == 1;
        sc.parallel.sequence_parallel = draw(2) == 1;
        INFO("t " << t << " p " << p << " d " << d << " mb " << sc.training.micro_batch << " " << to_string(schedule)
                  << " recompute " << to_string(sc.parallel.recompute) << " dp_overlap " << sc.parallel.dp_overlap
                  << " tp_backward_overlap " << sc.parallel.tp_backward_overlap << " sp "
                  << sc.parallel.sequence_parallel);
        check_same(both(sc, draw(2) == 1));
        ++plans;
    }
}
