// Stage-aware recomputation: per stage, the fewest checkpointed layers that fit in memory.
#include <catch2/catch.hpp>

#include "sim/memory.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

Scenario stage_aware(Schedule sched, int p = 4, int m = 8, int layers = 16) {
    Scenario sc = test::tiny_scenario(1, p, 1, m, layers);
    sc.parallel.schedule = sched;
    sc.parallel.recompute = Recompute::StageAware;
    sc.parallel.partition = PartitionMethod::Uniform;  // the tests count layers per stage as layers / p
    return sc;
}

// Peak of stage s when it checkpoints k layers (other stages do not change stage s's program).
double peak_with(const Scenario& sc, const Layout& l, int s, int k) {
    std::vector<int> ks(static_cast<std::size_t>(l.pipeline), 0);
    ks[static_cast<std::size_t>(s)] = k;
    return sim::peak_memory(build_program_checkpointing(sc, l, ks).op_lists[static_cast<std::size_t>(s)]).peak.value;
}

int recompute_ops(const sim::Program& p) {
    int n = 0;
    for (const auto& list : p.op_lists)
        for (const auto& op : list.ops) n += op.category == sim::OpCategory::Recompute;
    return n;
}

}  // namespace

TEST_CASE("stage-aware with ample memory recomputes nothing") {
    for (Schedule sched : {Schedule::OneFOneB, Schedule::GPipe}) {
        const Scenario sc = stage_aware(sched);
        const Layout l = validate_plan(sc);
        const BuildOptions ample{Bytes(1e15)};
        CHECK(checkpointed_layers(sc, l, ample) == std::vector<int>(4, 0));
        CHECK(recompute_ops(build_program(sc, l, ample)) == 0);
    }
}

TEST_CASE("stage-aware under 1F1B: the smallest count that fits, non-increasing along the pipeline") {
    const Scenario sc = stage_aware(Schedule::OneFOneB);
    const Layout l = validate_plan(sc);
    // Stage 0 holds p = 4 micro-batches, so it needs the most; give it half of the way between
    // its peak with every layer checkpointed and with none.
    const double lo = peak_with(sc, l, 0, 4), hi = peak_with(sc, l, 0, 0);
    REQUIRE(lo < hi);
    const double capacity = 0.5 * (lo + hi);
    const std::vector<int> k = checkpointed_layers(sc, l, BuildOptions{Bytes(capacity)});
    REQUIRE(k.size() == 4);
    CHECK(k[0] > 0);
    CHECK(k[0] < 4);
    for (int s = 0; s < 4; ++s) {
        INFO("stage " << s << " checkpoints " << k[static_cast<std::size_t>(s)]);
        if (s > 0) CHECK(k[static_cast<std::size_t>(s)] <= k[static_cast<std::size_t>(s - 1)]);
        const int ks = k[static_cast<std::size_t>(s)];
        CHECK(peak_with(sc, l, s, ks) <= capacity);               // it fits
        if (ks > 0) CHECK(peak_with(sc, l, s, ks - 1) > capacity);  // one layer fewer would not
    }
    // The last stage holds one micro-batch, less than stage 0 holds with every layer checkpointed
    // (p - 1 stashed layer inputs plus one full micro-batch): it recomputes nothing.
    CHECK(k[3] == 0);
}

TEST_CASE("stage-aware with shifted critical path: last stage never checkpoints, program builds") {
    const Scenario sc = stage_aware(Schedule::ShiftedCriticalPath);
    const Layout l = validate_plan(sc);
    const double capacity = 0.5 * (peak_with(sc, l, 0, 4) + peak_with(sc, l, 0, 0));
    const std::vector<int> k = checkpointed_layers(sc, l, BuildOptions{Bytes(capacity)});
    CHECK(k[3] == 0);
    CHECK(k[0] > 0);
    for (int s = 0; s < 3; ++s) CHECK(peak_with(sc, l, s, k[static_cast<std::size_t>(s)]) <= capacity);
}

TEST_CASE("every allocation is freed under SCP and stage-aware recomputation") {
    for (bool whole : {true, false}) {
        Scenario sc = stage_aware(Schedule::ShiftedCriticalPath);
        sc.parallel.scp_whole_stage_recompute = whole;
        const Layout l = validate_plan(sc);
        const sim::Program p = build_program_checkpointing(sc, l, {2, 1, 1, 0});
        for (const auto& list : p.op_lists) {
            double alloc = 0.0, freed = 0.0;
            for (const auto& op : list.ops) {
                alloc += op.memory_alloc.value;
                freed += op.memory_free.value;
            }
            CHECK(freed == Approx(alloc));
        }
    }
}
