// The schedule table (strategies/schedule_kinds.hpp): one row per schedule, found by its value and
// its word, and every row's stage order, where its own plan rules accept the plan, runs each
// micro-batch's forward and backward once per chunk (its weight gradient once when the row splits
// the backward) on every stage.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "strategies/names.hpp"
#include "strategies/schedule_kinds.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

TEST_CASE("every schedule has one row, found by its value and by its word", "[schedule][table]") {
    std::set<std::string> words;
    for (const ScheduleKind& k : schedule_kinds()) {
        INFO(k.name);
        CHECK(&schedule_kind(k.value) == &k);
        CHECK(words.insert(k.name).second);
        CHECK(parse_schedule(k.name, {}) == k.value);
        CHECK(to_string(k.value) == k.name);
        CHECK(k.order != nullptr);
        CHECK(k.check != nullptr);
        CHECK(k.in_flight != nullptr);
    }
    // names.hpp's table (parser, `cuboid list schedules`, search) is this one, row for row.
    REQUIRE(schedule_table().size() == schedule_kinds().size());
    for (std::size_t i = 0; i < schedule_kinds().size(); ++i) {
        CHECK(schedule_table()[i].value == schedule_kinds()[i].value);
        CHECK(std::string(schedule_table()[i].description) == schedule_kinds()[i].description);
    }
}

TEST_CASE("every schedule's order runs each pass once per micro-batch and chunk", "[schedule][table]") {
    int orders_checked = 0;
    for (const ScheduleKind& k : schedule_kinds())
        for (int p = 1; p <= 4; ++p)
            for (const int m : {1, 2, 4, 8})
                for (const int v : {1, 2, 3}) {
                    Scenario sc = test::tiny_scenario(1, p, 1, m, p * v);
                    sc.parallel.schedule = k.value;
                    sc.parallel.virtual_stages = v;
                    sc.parallel.recompute = Recompute::Full;
                    try {
                        k.check(PlanChecker(sc), sc, m);
                    } catch (const InputError&) {
                        continue;  // the row's rules refuse this plan
                    }
                    for (int s = 0; s < p; ++s) {
                        INFO(k.name << " p " << p << " m " << m << " v " << v << " stage " << s);
                        std::map<std::tuple<Pass, int, int>, int> runs;
                        for (const PipelineStep& st : k.order(p, m, v, s))
                            ++runs[{st.pass == Pass::ForwardCkpt ? Pass::Forward : st.pass, st.micro, st.chunk}];
                        for (int micro = 0; micro < m; ++micro)
                            for (int c = 0; c < v; ++c) {
                                CHECK(runs[{Pass::Forward, micro, c}] == 1);
                                CHECK(runs[{Pass::Backward, micro, c}] == 1);
                                CHECK(runs[{Pass::WeightGrad, micro, c}] == (k.splits_backward ? 1 : 0));
                                CHECK(runs[{Pass::Recompute, micro, c}] <= 1);
                            }
                        // Nothing else: no pass of a micro-batch or chunk that does not exist.
                        for (const auto& [key, n] : runs) {
                            CHECK(std::get<1>(key) < m);
                            CHECK(std::get<2>(key) < v);
                        }
                        // A stage never holds more micro-batches than the schedule runs.
                        CHECK(k.in_flight(p, m, v, s) <= m);
                        CHECK(k.in_flight(p, m, v, s) > 0);
                        ++orders_checked;
                    }
                }
    CHECK(orders_checked > 200);
}

TEST_CASE("a schedule's chunk count is the one its plan rules accept", "[schedule][table]") {
    for (const ScheduleKind& k : schedule_kinds())
        for (const int v : {1, 2, 3, 4}) {
            // Four stages, eight micro-batches: every schedule's other rules hold with full recompute.
            Scenario sc = test::tiny_scenario(1, 4, 1, 8, 4 * v);
            sc.parallel.schedule = k.value;
            sc.parallel.virtual_stages = v;
            sc.parallel.recompute = Recompute::Full;
            INFO(k.name << " v " << v);
            bool accepted = true;
            try {
                k.check(PlanChecker(sc), sc, 8);
            } catch (const InputError&) {
                accepted = false;
            }
            CHECK(accepted == (k.chunks == 0 ? v >= 2 : v == k.chunks));
        }
}
