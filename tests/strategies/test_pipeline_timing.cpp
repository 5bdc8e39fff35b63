// Pipeline schedules executed by the simulator with free communication and uniform stages.
#include <catch2/catch.hpp>

#include "sim/executor.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// A layer costs 6 units forward and 12 backward (layer_gemm_costs); with L/p layers per stage
// t_F = 6 u L/p, t_B = 12 u L/p.
constexpr std::int64_t kUnit = 1000;  // ps

sim::SimResult simulate_free(const Scenario& sc) {
    const sim::Program p = build_program(sc, validate_plan(sc));
    const sim::ProgramCosts costs = cuboid::test::layer_gemm_costs(p, Time(kUnit));
    cuboid::test::FreePlanner planner;
    return sim::simulate(p, costs, {}, planner);
}

}  // namespace

TEST_CASE("1F1B and GPipe: iteration (m + p - 1)(t_F + t_B), bubble fraction (p-1)/(m+p-1)") {
    for (Schedule sched : {Schedule::OneFOneB, Schedule::GPipe})
        for (int p : {1, 2, 4})
            for (int m : {1, 4, 8}) {
                Scenario sc = cuboid::test::tiny_scenario(1, p, 1, m, 8);
                sc.parallel.schedule = sched;
                const std::int64_t per_stage = 8 / p;
                const std::int64_t tf = 6 * kUnit * per_stage, tb = 12 * kUnit * per_stage;
                INFO(to_string(sched) << " p " << p << " m " << m);
                const sim::SimResult r = simulate_free(sc);
                CHECK(r.makespan.value == (m + p - 1) * (tf + tb));
                // The bubble is what is left of the iteration after the m (t_F + t_B) of work.
                const double bubble = 1.0 - static_cast<double>(m * (tf + tb)) / static_cast<double>(r.makespan.value);
                CHECK(bubble == Approx(static_cast<double>(p - 1) / (m + p - 1)));
            }
}

TEST_CASE("interleaved 1F1B: the bubble shrinks to (p - 1)(t_F + t_B)/v") {
    for (int p : {2, 4})
        for (int v : {2, 3})
            for (int m : {p, 2 * p}) {
                const int layers = 2 * p * v;  // 2 layers per chunk
                Scenario sc = cuboid::test::tiny_scenario(1, p, 1, m, layers);
                sc.parallel.schedule = Schedule::Interleaved;
                sc.parallel.virtual_stages = v;
                // Per stage and micro-batch over all its chunks: t_F = 6u * 2v, t_B = 12u * 2v.
                const std::int64_t tf = 6 * kUnit * 2 * v, tb = 12 * kUnit * 2 * v;
                INFO("p " << p << " v " << v << " m " << m);
                const sim::SimResult r = simulate_free(sc);
                CHECK(r.makespan.value == m * (tf + tb) + (p - 1) * (tf + tb) / v);
            }
}

TEST_CASE("no deadlock over a grid of plans, with tensor and data parallelism") {
    for (Schedule sched : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved})
        for (int p : {1, 2, 3, 4})
            for (int m : {1, 2, 3, 4, 8})
                for (int v : {1, 2, 3}) {
                    const bool interleaved = sched == Schedule::Interleaved;
                    if (interleaved != (v > 1)) continue;
                    if (interleaved && (p < 2 || m % p != 0)) continue;
                    for (Recompute rc : {Recompute::None, Recompute::Full}) {
                        Scenario sc = cuboid::test::tiny_scenario(2, p, 2, m, 12);
                        sc.parallel.schedule = sched;
                        sc.parallel.virtual_stages = v;
                        sc.parallel.recompute = rc;
                        sc.parallel.sequence_parallel = rc == Recompute::Full;
                        sc.parallel.zero_stage = rc == Recompute::Full ? 1 : 0;
                        sc.parallel.dp_overlap = m % 2 == 0;
                        INFO(to_string(sched) << " p " << p << " m " << m << " v " << v << " " << to_string(rc));
                        sim::SimResult r;
                        REQUIRE_NOTHROW(r = simulate_free(sc));
                        CHECK(r.makespan.value > 0);
                    }
                }
}
