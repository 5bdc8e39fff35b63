// Shifted critical path executed by the simulator: no deadlock, and the makespans of Merak's
// schedule in the unit-cost model of seed_algorithms §1.1.
#include <catch2/catch.hpp>

#include <string>

#include "sim/executor.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr std::int64_t kUnit = 1000;  // ps

// Like test::layer_gemm_costs, but recomputed GEMMs cost what forward GEMMs cost: per layer
// t_F = t_R = 6 units and t_B = 12 units (pure backward), i.e. seed_algorithms' t_F = 1, t_R = 1,
// t_B = 2 in units of one stage forward.
sim::ProgramCosts layer_costs_with_recompute(const sim::Program& p) {
    sim::ProgramCosts c;
    for (const auto& list : p.op_lists) {
        auto& d = c.durations.emplace_back(list.ops.size(), Time(0));
        for (std::size_t i = 0; i < list.ops.size(); ++i) {
            const sim::Op& op = list.ops[i];
            if (sim::is_gemm(op.kind) && p.labels[op.label].find("logits") == std::string::npos) d[i] = Time(kUnit);
        }
    }
    return c;
}

sim::SimResult simulate_free(const Scenario& sc) {
    const sim::Program p = build_program(sc, validate_plan(sc));
    test::FreePlanner planner;
    return sim::simulate(p, layer_costs_with_recompute(p), {}, planner);
}

Scenario pipeline(int p, int m, Schedule sched, Recompute r) {
    Scenario sc = test::tiny_scenario(1, p, 1, m, p);  // one layer per stage
    sc.parallel.schedule = sched;
    sc.parallel.recompute = r;
    return sc;
}

}  // namespace

TEST_CASE("SCP reproduces the unit-model makespans of seed_algorithms §1.1") {
    // One stage forward = 6 units (one layer). Rows of the table in §1.1 (t_F = 1, t_B = 2,
    // t_R = 1, zero communication): 1F1B + recompute everywhere = (m + p - 1)(t_F + t_B + t_R);
    // SCP 38, 70, 82 for (p, m) = (4, 8), (4, 16), (8, 16); 1F1B without recompute 33, 57, 69.
    struct Row { int p, m; std::int64_t scp; };
    for (const Row row : {Row{4, 8, 38}, Row{4, 16, 70}, Row{8, 16, 82}}) {
        INFO("p " << row.p << " m " << row.m);
        const std::int64_t stage_fwd = 6 * kUnit;
        const auto full = simulate_free(pipeline(row.p, row.m, Schedule::OneFOneB, Recompute::Full));
        const auto none = simulate_free(pipeline(row.p, row.m, Schedule::OneFOneB, Recompute::None));
        const auto scp = simulate_free(pipeline(row.p, row.m, Schedule::ShiftedCriticalPath, Recompute::Full));
        CHECK(full.makespan.value == (row.m + row.p - 1) * 4 * stage_fwd);
        CHECK(none.makespan.value == (row.m + row.p - 1) * 3 * stage_fwd);
        CHECK(scp.makespan.value == row.scp * stage_fwd);
    }
}

TEST_CASE("SCP is never slower than 1F1B with full recompute, never faster than no recompute") {
    // The last stage does no recompute and the others' cool-down recomputes leave the critical
    // path; the bound without any recompute is (m + p - 1)(t_F + t_B).
    for (int p : {2, 3, 4, 8})
        for (int m = std::max(p, 4); m <= 16; m += 3) {
            INFO("p " << p << " m " << m);
            const auto full = simulate_free(pipeline(p, m, Schedule::OneFOneB, Recompute::Full));
            const auto none = simulate_free(pipeline(p, m, Schedule::OneFOneB, Recompute::None));
            const auto scp = simulate_free(pipeline(p, m, Schedule::ShiftedCriticalPath, Recompute::Full));
            CHECK(scp.makespan.value <= full.makespan.value);
            CHECK(scp.makespan.value >= none.makespan.value);
        }
}

TEST_CASE("SCP: no deadlock over p in {2,3,4,8}, m in 4..16, with tensor and data parallelism") {
    for (int p : {2, 3, 4, 8})
        for (int m = std::max(p, 4); m <= 16; ++m) {
            const bool odd = m % 2 == 1;
            Scenario sc = test::tiny_scenario(2, p, 2, m, 8);
            sc.parallel.schedule = Schedule::ShiftedCriticalPath;
            sc.parallel.recompute = odd ? Recompute::StageAware : Recompute::Full;
            sc.parallel.sequence_parallel = m % 3 == 0;
            sc.parallel.scp_whole_stage_recompute = m % 4 != 1;
            sc.parallel.dp_overlap = !odd;
            INFO("p " << p << " m " << m);
            sim::SimResult r;
            REQUIRE_NOTHROW(r = simulate_free(sc));
            CHECK(r.makespan.value > 0);
        }
}
