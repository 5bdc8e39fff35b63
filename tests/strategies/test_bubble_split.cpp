// The bubble of the breakdown split into the schedule's fill and drain and the waiting for a
// stage with more work: the parts sum to the bubble, the imbalance is the critical GPU's busy-time
// deficit against the busiest stage (at most the bubble), and a plan with one stage has none.
#include <catch2/catch.hpp>

#include <algorithm>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/run.hpp"
#include "strategies/run_figures.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

RunResult run(const Scenario& sc) {
    static const hw::Catalog catalog = hw::Catalog::load_builtin();
    return run_scenario(sc, RunOptions{.hardware = hw::Hardware::build(sc.cluster, catalog)});
}

Scenario stages(std::vector<int> stage_layers) {
    const int p = static_cast<int>(stage_layers.size());
    Scenario sc = cuboid::test::tiny_scenario(1, p, 1, 8, 8);
    sc.model.hidden = 512;
    sc.model.heads = 8;
    sc.model.seq_len = 256;
    sc.parallel.stage_layers = std::move(stage_layers);
    return sc;
}

}  // namespace

TEST_CASE("bubble split: the imbalance is the busy-time deficit against the busiest stage, at most the bubble",
          "[bubble]") {
    // Busy 5 s against a busiest stage of 7 s: 2 s of a 3 s bubble is waiting for it.
    BubbleSplit s = split_bubble(3.0, 5.0, std::vector<double>{5.0, 7.0});
    CHECK(s.stage_imbalance_s == 2.0);
    CHECK(s.schedule_s == 1.0);
    // Never more than the bubble: the rest of the deficit was spent in exposed communication.
    s = split_bubble(1.0, 5.0, std::vector<double>{5.0, 7.0});
    CHECK(s.stage_imbalance_s == 1.0);
    CHECK(s.schedule_s == 0.0);
    // The busiest stage itself waits only for the schedule.
    s = split_bubble(3.0, 7.0, std::vector<double>{5.0, 7.0});
    CHECK(s.stage_imbalance_s == 0.0);
    CHECK(s.schedule_s == 3.0);
}

TEST_CASE("bubble split of a run: parts sum to the bubble; a light critical stage waits for a heavy one",
          "[bubble]") {
    for (const std::vector<int>& layers :
         {std::vector<int>{2, 6}, std::vector<int>{4, 4}, std::vector<int>{6, 2}, std::vector<int>{2, 4, 2}}) {
        INFO("stage layers " << layers[0] << ", " << layers[1] << " ... (" << layers.size() << " stages)");
        const RunResult r = run(stages(layers));
        REQUIRE(r.stage_busy_s.size() == layers.size());
        const BubbleSplit& s = r.bubble_split;
        CHECK(s.schedule_s >= 0.0);
        CHECK(s.stage_imbalance_s >= 0.0);
        CHECK(s.schedule_s + s.stage_imbalance_s == Approx(r.breakdown.bubble_s).epsilon(1e-12));
        const double busiest = *std::max_element(r.stage_busy_s.begin(), r.stage_busy_s.end());
        const double own = r.breakdown.compute_s + r.breakdown.recompute_s;
        CHECK(s.stage_imbalance_s == Approx(std::min(r.breakdown.bubble_s, std::max(0.0, busiest - own))).margin(1e-12));
        // The stage with the most layers is the busiest (with equal layers, the output layer
        // makes the last stage busier).
        const auto most = std::max_element(layers.begin(), layers.end());
        const std::size_t expected = std::count(layers.begin(), layers.end(), *most) == 1
                                         ? static_cast<std::size_t>(most - layers.begin())
                                         : layers.size() - 1;
        CHECK(busiest == r.stage_busy_s[expected]);
    }
    // A heavy last stage is itself the critical GPU (it finishes last): its bubble is the fill.
    const RunResult heavy_last = run(stages({2, 6}));
    CHECK(heavy_last.bubble_split.stage_imbalance_s == 0.0);
    // A heavy middle stage: 1F1B's first stage finishes last and spends most of its bubble
    // waiting for it, the imbalance, not the schedule.
    const RunResult heavy_middle = run(stages({2, 4, 2}));
    CHECK(heavy_middle.critical_rank == 0);
    CHECK(heavy_middle.bubble_split.stage_imbalance_s > heavy_middle.bubble_split.schedule_s);
    // Balanced stages of the same model wait mostly for the schedule.
    const RunResult balanced = run(stages({3, 2, 3}));
    CHECK(balanced.bubble_split.stage_imbalance_s < balanced.bubble_split.schedule_s);
    // One stage: nothing to wait for.
    Scenario one = cuboid::test::tiny_scenario(1, 1, 2, 8, 8);
    const RunResult single = run(one);
    CHECK(single.bubble_split.stage_imbalance_s == 0.0);
}
