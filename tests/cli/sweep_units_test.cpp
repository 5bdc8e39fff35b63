// The pieces of `cuboid sweep` that need no simulation: the points of the axes, their scenarios,
// the row order and the Pareto front.
#include <catch2/catch.hpp>

#include <thread>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/sweep_hardware_cache.hpp"
#include "strategies/cli/sweep_points.hpp"
#include "strategies/cli/sweep_ranking.hpp"
#include "tests/cli/loader_fixtures.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {

const SweepAxes kAxes{{"parallel.tensor", {"1", "2", "4"}},
                      {"parallel.pipeline", {"1", "2"}},
                      {"training.micro_batch", {"1", "2", "4", "8"}}};

PointOutcome outcome(PointStatus status, double time_s = 0.0, double memory = 0.0) {
    PointOutcome o;
    o.status = status;
    if (status == PointStatus::Ok || status == PointStatus::OutOfMemory) {
        o.result = RunResult{};
        o.result->iteration_time_s = time_s;
        o.result->peak_memory_bytes = memory;
        o.result->fits_in_memory = status == PointStatus::Ok;
    } else {
        o.reason = "why";
    }
    return o;
}

}  // namespace

TEST_CASE("a sweep has one point per combination, the first axis outermost", "[cli][sweep]") {
    const auto points = sweep_points(kAxes);
    // The cartesian product: 3 * 2 * 4 combinations.
    REQUIRE(points.size() == 3u * 2u * 4u);
    CHECK(sweep_point_count(kAxes) == points.size());
    // Nested loops in file order: point ((t * 2) + p) * 4 + m holds value t, p, m of the axes.
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t p = 0; p < 2; ++p)
            for (std::size_t m = 0; m < 4; ++m) {
                const SweepPoint& point = points[(t * 2 + p) * 4 + m];
                CHECK(point == SweepPoint{kAxes[0].second[t], kAxes[1].second[p], kAxes[2].second[m]});
            }
    CHECK(sweep_point_count({}) == 0);
    CHECK(sweep_points({}).empty());
}

TEST_CASE("a point's scenario is the base with the point's values, and no sweep", "[cli][sweep]") {
    Scenario base;
    base.source_file = "s.yaml";
    base.parallel.data = 3;
    base.sweep = kAxes;
    const Scenario s = point_scenario(base, kAxes, {"4", "2", "8"}, fake_names());
    CHECK(s.parallel.tensor == 4);
    CHECK(s.parallel.pipeline == 2);
    CHECK(s.training.micro_batch == 8);
    CHECK(s.parallel.data == 3);  // not swept: kept from the base
    CHECK(s.sweep.empty());
}

TEST_CASE("a model.preset axis is applied before the other model axes", "[cli][sweep]") {
    const SweepAxes axes{{"model.layers", {"2"}}, {"model.preset", {"tiny"}}};
    Scenario base;
    const Scenario s = point_scenario(base, axes, {"2", "tiny"}, fake_names());
    // The fake preset "tiny" has 4 layers and hidden 256; the explicit axis wins over the preset.
    CHECK(s.model.layers == 2);
    CHECK(s.model.hidden == 256);
}

TEST_CASE("a --set on a swept key is rejected at the --set", "[cli][sweep]") {
    CHECK_NOTHROW(reject_swept_overrides(kAxes, {"parallel.data", "cluster.nodes"}));
    const InputError e = input_error_of([] { reject_swept_overrides(kAxes, {"parallel.pipeline"}); });
    CHECK(e.where().file == "--set");
    CHECK(e.where().key == "parallel.pipeline");
    CHECK(contains(e.what(), "is swept"));
}

TEST_CASE("the Pareto front of time against memory", "[cli][sweep][pareto]") {
    // (time, memory): A (1, 50) fastest; B (2, 30) slower but smaller; C (2, 40) dominated by B
    // (same time, more memory); D (3, 30) dominated by B (slower, same memory); E (4, 10) the
    // smallest; F (1, 50) equal to A, so neither dominates the other; G (0.5, 5) would dominate
    // everything but is not eligible (it did not run or did not fit).
    const std::vector<ParetoCandidate> c{{1, 50, true}, {2, 30, true}, {2, 40, true}, {3, 30, true},
                                         {4, 10, true}, {1, 50, true}, {0.5, 5, false}};
    const auto on = pareto_front(c);
    CHECK(on == std::vector<bool>{true, true, false, false, true, true, false});

    // Brute force over every pair gives the same front (the definition itself).
    for (std::size_t p = 0; p < c.size(); ++p) {
        bool dominated = false;
        for (std::size_t q = 0; q < c.size(); ++q)
            dominated = dominated || (c[q].eligible && c[q].time_s <= c[p].time_s &&
                                      c[q].memory_bytes <= c[p].memory_bytes &&
                                      (c[q].time_s < c[p].time_s || c[q].memory_bytes < c[p].memory_bytes));
        CHECK(on[p] == (c[p].eligible && !dominated));
    }
}

TEST_CASE("rows: ok by time, then oom by time, then invalid, then errors, ties in point order",
          "[cli][sweep]") {
    const std::vector<PointOutcome> o{outcome(PointStatus::Invalid),         outcome(PointStatus::Ok, 3.0, 1),
                                      outcome(PointStatus::OutOfMemory, 1.0), outcome(PointStatus::Error),
                                      outcome(PointStatus::Ok, 2.0, 5),       outcome(PointStatus::Invalid),
                                      outcome(PointStatus::Ok, 2.0, 9),       outcome(PointStatus::OutOfMemory, 0.5)};
    CHECK(sweep_order(o) == std::vector<std::size_t>{4, 6, 1, 7, 2, 0, 5, 3});
    // Only ok points compete: the oom point 7 is the fastest but not on the front. Point 4 (2 s,
    // 5 B) dominates 6 (2 s, 9 B); 1 (3 s, 1 B) is the smallest.
    CHECK(sweep_pareto(o) == std::vector<bool>{false, true, false, false, true, false, false, false});
}

TEST_CASE("the hardware model is built once per distinct cluster and shared", "[cli][sweep]") {
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    hw::ClusterSpec one_node;
    hw::ClusterSpec two_nodes = one_node;
    two_nodes.nodes = 2;
    std::shared_ptr<const hw::Hardware> a, b;
    // Two threads asking for the same cluster at once get the same model.
    std::thread first([&] { a = cache.get(one_node); });
    std::thread second([&] { b = cache.get(one_node); });
    first.join();
    second.join();
    CHECK(a == b);
    CHECK(cache.get(one_node) == a);
    const auto c = cache.get(two_nodes);
    CHECK(c != a);
    CHECK(c->spec().nodes == 2);
    CHECK(cache.size() == 2u);
    CHECK(cluster_key(one_node) != cluster_key(two_nodes));
}

TEST_CASE("a point that fails unexpectedly is recorded as an error, not thrown", "[cli][sweep]") {
    // A GPU lookup that breaks with something other than an InputError stands in for a bug.
    NameResolvers broken = fake_names();
    broken.gpu_name = [](const std::string&) -> std::string { throw std::logic_error("lookup broke"); };
    const SweepAxes axes{{"cluster.gpu", {"a100"}}};
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const PointOutcome o = run_point(Scenario{}, axes, {"a100"}, broken, cache);
    CHECK(o.status == PointStatus::Error);
    CHECK(status_text(o) == "error: lookup broke");
    CHECK_FALSE(o.result);

    // An InputError (here: no model given) is an invalid point, with the key it names.
    const PointOutcome invalid = run_point(Scenario{}, axes, {"a100"}, fake_names(), cache);
    CHECK(invalid.status == PointStatus::Invalid);
    CHECK(contains(status_text(invalid), "invalid: model.layers: missing"));
}
