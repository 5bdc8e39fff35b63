// A validation of a cluster whose profile has a `host:` section: the prediction observes the
// same (transformed) program that run_scenario simulates and the executors run, and the
// execution plan keeps the dispatch dependencies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "strategies/host_dispatch.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "tests/strategies/strategy_fixtures.hpp"
#include "validate/plan/execution_plan.hpp"
#include "validate/report/prediction.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::validate;

namespace {

// A profile with only a host section (no metadata: any GPU), in a file of its own.
std::string host_profile_file() {
    const auto path = cuboid::scratch::file("cuboid-test-host-profile.yaml");
    std::ofstream(path) << "format: cuboid-hardware-profile/1\nhost:\n  dispatch_us: 50\n  sync: [optimizer, pipeline]\n";
    return path.string();
}

}  // namespace

TEST_CASE("host prediction: op indices of the prediction are those of the transformed program", "[host]") {
    Scenario sc = test::tiny_scenario(1, 2, 1, 4);
    sc.parallel.recompute = Recompute::Full;
    const Prediction without = predict(sc);
    sc.cluster.profile = host_profile_file();
    const Prediction with = predict(sc);
    // One dispatch op per op of every list.
    REQUIRE(with.program.op_lists.size() == without.program.op_lists.size());
    for (std::size_t l = 0; l < with.program.op_lists.size(); ++l)
        CHECK(with.program.op_lists[l].ops.size() == 2 * without.program.op_lists[l].ops.size());
    // The per-op samples are GPU ops only, as the executors time them: as many as without.
    CHECK(with.figures.ops.size() == without.figures.ops.size());
    for (const OpSample& s : with.figures.ops)
        CHECK(with.program.op_lists[with.program.ranks[s.rank].op_list].ops[s.op].kind != sim::OpKind::HostDispatch);
    // Tiny kernels (a few us) behind 50 us dispatches: the host bounds the iteration.
    CHECK(with.result.iteration_time_s > without.result.iteration_time_s);
    std::filesystem::remove(sc.cluster.profile.value());
}

TEST_CASE("host prediction: the execution plan keeps every dispatch dependency", "[host]") {
    Scenario sc = test::tiny_scenario(2, 2, 2, 4);
    sc.parallel.recompute = Recompute::Full;
    hw::HostDispatchCosts host;
    host.compute = host.communication = microseconds(50);
    host.sync_optimizer = host.sync_pipeline = true;
    const sim::Program p = with_host_dispatch(build_program(sc, validate_plan(sc)), host);
    const ExecutionPlan plan = make_execution_plan(p);
    for (std::size_t l = 0; l < p.op_lists.size(); ++l) {
        const sim::OpList& list = p.op_lists[l];
        const ListPlan& lp = plan.lists[l];
        REQUIRE(lp.ops.size() == list.ops.size());
        // A GPU op on another stream than its dispatch waits for the dispatch's event.
        for (std::uint32_t i = 1; i < list.ops.size(); i += 2) {
            REQUIRE(list.ops[i - 1].kind == sim::OpKind::HostDispatch);
            const auto& waits = lp.ops[i].waits;
            CHECK(std::find(waits.begin(), waits.end(), i - 1) != waits.end());
            CHECK(lp.ops[i - 1].records_event);
        }
    }
}
