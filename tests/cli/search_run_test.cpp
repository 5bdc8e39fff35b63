// `cuboid search` on small spaces: branch and bound finds the optimum of the exhaustive sweep of
// the same space, its bound never exceeds a simulated time, and its memory verdict is the
// simulation's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/search_run.hpp"
#include "strategies/cli/search_share.hpp"

using namespace cuboid;
using namespace cuboid::cli;

namespace {

// A small GPT (8 layers, hidden 1024, 16 heads, 1024 tokens) on two nodes of eight 40 GB A100s
// (16 GPUs, so data parallelism crosses InfiniBand), 16 sequences per iteration.
constexpr const char* kTinyGpt =
    "name: tiny-search\n"
    "model: {layers: 8, hidden: 1024, heads: 16, seq_len: 1024, vocab: 32000}\n"
    "cluster: {gpu: a100-sxm-40gb, nodes: 2, gpus_per_node: 8}\n"
    "training: {global_batch: 16}\n";

Scenario tiny_gpt() { return load_scenario_text(kTinyGpt, "tiny.yaml", "", builtin_name_resolvers()); }

// Every schedule and recompute policy, three tensor and pipeline degrees, two micro-batches,
// sequence parallelism and ZeRO on and off (about 500 candidates).
SearchSpace small_space(const Scenario& base) {
    SearchSpace sp = full_search_space(base);
    sp.tensor = {1, 2, 4};
    sp.pipeline = {1, 2, 4};
    sp.micro_batch = {1, 2};
    sp.virtual_stages = {2};
    sp.tensor_mode = {"1d"};
    sp.overlap_chunks = {1};
    sp.zero_stage = {0, 1};
    sp.context = {1};
    return sp;
}

// `sp` cut to one plan per degree: micro-batch 1, 1F1B, no recomputation, 1-D tensor parallelism
// without chunked overlap, ZeRO 1; sequence parallelism as given.
SearchSpace one_setting(SearchSpace sp, bool sequence_parallel) {
    sp.micro_batch = {1};
    sp.schedule = {"1f1b"};
    sp.recompute = {"none"};
    sp.tensor_mode = {"1d"};
    sp.overlap_chunks = {1};
    sp.sequence_parallel = {sequence_parallel};
    sp.zero_stage = {1};
    return sp;
}

struct Searched {
    SearchResult bnb;
    SearchResult all;
};

// The tiny GPT's small space searched on 2 threads for the top 3, with `options` changed by `adjust`.
SearchResult search_tiny(const std::function<void(SearchOptions&)>& adjust) {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const Scenario base = tiny_gpt();
    SearchOptions o;
    o.threads = 2;
    o.keep = 3;
    adjust(o);
    return run_search(base, small_space(base), names, cache, o);
}

// One branch-and-bound search and one exhaustive one, computed once for the test cases.
const Searched& searched() {
    static const Searched s{search_tiny([](SearchOptions&) {}),
                            search_tiny([](SearchOptions& o) { o.exhaustive = true; })};
    return s;
}

std::vector<double> top_times(const SearchResult& r, std::size_t n) {
    std::vector<double> t;
    for (const std::size_t i : r.plans.order)
        if (r.plans.outcomes[i].status == PointStatus::Ok && t.size() < n)
            t.push_back(r.plans.outcomes[i].result->iteration_time_s);
    return t;
}

}  // namespace

TEST_CASE("search finds the optimum of the exhaustive sweep of the same space", "[search]") {
    const Searched& s = searched();
    REQUIRE(best_plan(s.bnb));
    REQUIRE(best_plan(s.all));
    // The top 3 (the plans kept exact) have the same times, so the same optimum.
    CHECK(top_times(s.bnb, 3) == top_times(s.all, 3));
    CHECK(plan_text(s.bnb.plans, *best_plan(s.bnb)) == plan_text(s.all.plans, *best_plan(s.all)));
    // The bound did prune: fewer simulations than plans that fit.
    CHECK(s.bnb.counts.pruned_bound > 0);
    CHECK(s.bnb.counts.simulated < s.all.counts.simulated);
    // Same candidates and verdicts before the bound; every candidate is counted once.
    CHECK(s.bnb.counts.candidates == s.all.counts.candidates);
    const SearchCounts& c = s.bnb.counts;
    CHECK(c.invalid + c.pruned_memory + c.pruned_bound + c.simulated == c.candidates);
    CHECK(s.all.counts.pruned_bound == 0);
}

TEST_CASE("the bound is a lower bound on every simulated plan of the space", "[search]") {
    const SearchResult& all = searched().all;
    REQUIRE(all.counts.simulated > 100);
    std::set<std::string> schedules;
    for (std::size_t i = 0; i < all.plans.points.size(); ++i) {
        const auto& o = all.plans.outcomes[i];
        REQUIRE(o.status == PointStatus::Ok);
        INFO(plan_text(all.plans, i));
        CHECK(all.bound_s[i] <= o.result->iteration_time_s);
        CHECK(all.bound_s[i] > 0.0);
        schedules.insert(all.plans.points[i][4]);
    }
    CHECK(schedules.size() == 7);  // gpipe, 1f1b, interleaved, shifted-critical-path, zb-h1, zb-v, dualpipev: every schedule was bounded and simulated
}

TEST_CASE("the bound carries the communication that cannot overlap and stays below the simulation",
          "[search]") {
    // Every schedule, ZeRO 0 to 3 and data degrees 1 to 16 (tensor x pipeline on 16 GPUs), each
    // plan bounded and simulated on its own.
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const Scenario base = tiny_gpt();
    SearchSpace sp = full_search_space(base);
    sp.tensor = {1, 4};
    sp.pipeline = {1, 2, 4};
    sp.micro_batch = {1};
    sp.virtual_stages = {2};
    sp.recompute = {"none", "full"};  // shifted-critical-path needs full
    sp.tensor_mode = {"1d"};
    sp.overlap_chunks = {1};
    sp.sequence_parallel = {false};
    sp.zero_stage = {0, 1, 2, 3};
    sp.context = {1};
    const SearchCandidates c = search_candidates(sp, base);
    std::set<std::string> schedules, zero_stages, data_degrees;
    int bounded = 0, data_parallel = 0, communication_in_bound = 0;
    for (const auto& point : c.points) {
        const CandidateCheck check = check_candidate(base, c.axes, point, names, cache);
        if (check.status != CandidateStatus::Feasible) continue;
        const PointOutcome run = run_point(base, c.axes, point, names, cache);
        REQUIRE(run.result);
        INFO(fmt::format("t{} p{} d{} {} zero{}", point[0], point[1], point[2], point[4], point[10]));
        CHECK(check.bound.total_s() <= run.result->iteration_time_s);
        CHECK(check.bound.critical_path_s >= check.bound.compute_s);
        ++bounded;
        schedules.insert(point[4]);
        zero_stages.insert(point[10]);
        data_degrees.insert(point[2]);
        if (point[2] != "1") {
            ++data_parallel;
            // The last gradients' reduction after the last backward: past the stage work alone.
            if (check.bound.critical_path_s > check.bound.compute_s + check.bound.fill_s) ++communication_in_bound;
        }
    }
    CHECK(bounded > 60);
    CHECK(schedules.size() == 7);  // gpipe, 1f1b, interleaved, shifted-critical-path, zb-h1, zb-v, dualpipev
    CHECK(zero_stages.size() == 4);
    CHECK(data_degrees.size() >= 4);
    CHECK(data_parallel > 0);
    CHECK(communication_in_bound == data_parallel);
}

TEST_CASE("context parallelism in the search: every mode and degree, bounded below the simulation", "[search]") {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const Scenario base = tiny_gpt();
    SearchSpace sp = one_setting(full_search_space(base), true);
    sp.tensor = {1, 2};
    sp.pipeline = {1, 2};
    CHECK(sp.context == std::vector<int>{1, 2, 4, 8});
    const SearchCandidates c = search_candidates(sp, base);
    std::set<std::string> seen;
    for (const auto& point : c.points) {
        // tensor x pipeline x context x data = 16 GPUs
        CHECK(std::stoi(point[0]) * std::stoi(point[1]) * std::stoi(point[11]) * std::stoi(point[2]) == 16);
        if (point[11] == "1") {
            CHECK(point[12] == "ring");  // the mode is varied only with context parallelism
            continue;
        }
        const CandidateCheck check = check_candidate(base, c.axes, point, names, cache);
        REQUIRE(check.status == CandidateStatus::Feasible);
        const PointOutcome run = run_point(base, c.axes, point, names, cache);
        REQUIRE(run.result);
        INFO(fmt::format("t{} p{} c{} {}", point[0], point[1], point[11], point[12]));
        CHECK(check.bound.total_s() <= run.result->iteration_time_s);
        seen.insert(point[11] + " " + point[12]);
    }
    CHECK(seen.size() == 9);  // context 2, 4, 8 in each of the three modes
    // The default space adds context parallelism for long sequences only.
    CHECK(default_search_space(base).context == std::vector<int>{1});
    Scenario long_context = base;
    long_context.model.seq_len = 32768;
    CHECK(default_search_space(long_context).context == std::vector<int>{1, 2, 4, 8});
}

TEST_CASE("hybrid sharding in the search: ZeRO-3 shard groups that divide the replicas, bounded below the simulation",
          "[search]") {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const Scenario base = tiny_gpt();
    SearchSpace sp = one_setting(full_search_space(base), true);
    sp.tensor = {1, 2};
    sp.pipeline = {1};
    sp.context = {1};
    sp.zero_stage = {1, 3};
    // The full space: full sharding and shard groups up to one node (8 GPUs), below the 16 GPUs.
    CHECK(sp.shard_group == std::vector<int>{0, 2, 4, 8});
    sp.shard_group.push_back(16);  // as many as the replicas at t = 1: full sharding, so skipped
    const SearchCandidates c = search_candidates(sp, base);
    REQUIRE(c.axes.back().first == "parallel.shard_group");
    std::multiset<std::string> plans;
    for (const auto& point : c.points) {
        const int replicas = std::stoi(point[2]);  // context 1: the data degree
        const int shard = std::stoi(point.back());
        plans.insert(fmt::format("t{} zero{} shard{}", point[0], point[10], shard));
        // A ZeRO-1 plan, and a fully sharded one, carry the full count (the scenario key's default).
        CHECK(replicas % shard == 0);
        if (point[10] == "1") CHECK(shard == replicas);
        const CandidateCheck check = check_candidate(base, c.axes, point, names, cache);
        REQUIRE(check.status == CandidateStatus::Feasible);
        const PointOutcome run = run_point(base, c.axes, point, names, cache);
        REQUIRE(run.result);
        INFO(fmt::format("t{} zero{} shard{}", point[0], point[10], shard));
        CHECK(check.bound.total_s() <= run.result->iteration_time_s);
    }
    // t1 (16 replicas): ZeRO-1, ZeRO-3 full, 2, 4, 8; t2 (8 replicas): ZeRO-1, ZeRO-3 full, 2, 4.
    CHECK(plans == std::multiset<std::string>{"t1 zero1 shard16", "t1 zero3 shard16", "t1 zero3 shard2",
                                              "t1 zero3 shard4", "t1 zero3 shard8", "t2 zero1 shard8",
                                              "t2 zero3 shard8", "t2 zero3 shard2", "t2 zero3 shard4"});
    // No hybrid value, or no ZeRO-3: no shard-group axis (the columns of a search stay as they were).
    CHECK(default_search_space(base).shard_group == std::vector<int>{0});
    CHECK_FALSE(default_search_space(base).hybrid_sharding());
    SearchSpace no_zero3 = sp;
    no_zero3.zero_stage = {0, 1};
    CHECK(search_candidates(no_zero3, base).axes.back().first == "parallel.context_mode");
    // Branch and bound finds the exhaustive optimum over the shard groups too.
    SearchOptions o;
    o.threads = 2;
    o.keep = 3;
    const SearchResult bnb = run_search(base, sp, names, cache, o);
    o.exhaustive = true;
    const SearchResult all = run_search(base, sp, names, cache, o);
    REQUIRE(best_plan(bnb));
    CHECK(top_times(bnb, 3) == top_times(all, 3));
    CHECK(plan_text(bnb.plans, *best_plan(bnb)) == plan_text(all.plans, *best_plan(all)));
}

TEST_CASE("memory pruning agrees with the simulation's memory verdict", "[search]") {
    // GPT 7.5B on eight 40 GB A100s: 16 bytes of weights, gradients and Adam state per parameter
    // (2 + 2 + 4 + 4 + 4) is 120 GB unsharded, so tensor 1 and 2 without ZeRO cannot fit (120 and
    // 60 GB per GPU) while tensor 8 (15 GB) can.
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    Scenario base = load_scenario_text(
        "model: {preset: gpt-7.5b}\ncluster: {gpu: a100-sxm-40gb, nodes: 1, gpus_per_node: 8}\n"
        "training: {global_batch: 8}\nparallel: {recompute: full}\n",
        "big.yaml", "", names);
    SearchSpace sp = default_search_space(base);
    sp.tensor = {1, 2, 8};
    sp.pipeline = {1};
    sp.micro_batch = {1};
    sp.schedule = {"1f1b"};
    sp.recompute = {"full"};
    sp.tensor_mode = {"1d"};
    sp.overlap_chunks = {1};
    sp.sequence_parallel = {false};
    sp.zero_stage = {0};
    const SearchCandidates c = search_candidates(sp, base);
    REQUIRE(c.points.size() == 3);
    for (const auto& point : c.points) {
        const CandidateCheck check = check_candidate(base, c.axes, point, names, cache);
        const PointOutcome run = run_point(base, c.axes, point, names, cache);
        INFO("tensor " << point[0]);
        REQUIRE(run.result);
        CHECK(check.peak_memory_bytes == run.result->peak_memory_bytes);
        CHECK((check.status == CandidateStatus::OutOfMemory) == !run.result->fits_in_memory);
        CHECK((check.status == CandidateStatus::OutOfMemory) == (point[0] != "8"));
    }
}

TEST_CASE("search candidates of a cluster past 2^31 GPUs are counted in 64 bits", "[search]") {
    // 65,536 x 65,536 GPUs wrapped to 0 GPUs: every tensor x pipeline then "divided" the cluster
    // into 0 replicas, and the batch check divided by zero.
    const auto names = builtin_name_resolvers();
    Scenario base = load_scenario_text("model: {preset: gpt-7.5b}\ncluster: {nodes: 1, gpus_per_node: 8}\n"
                                       "training: {global_batch: 8}\n",
                                       "huge.yaml", "", names);
    base.cluster.nodes = 65536;
    base.cluster.gpus_per_node = 65536;
    SearchSpace sp = default_search_space(base);
    sp.tensor = {8, 65536};
    sp.pipeline = {65536};
    sp.micro_batch = {1};
    sp.schedule = {"1f1b"};
    const SearchCandidates c = search_candidates(sp, base);
    // Only 65,536 x 65,536 leaves data 1, which 8 samples of micro-batch 1 divide.
    for (const auto& point : c.points) CHECK(point[0] == "65536");
    CHECK_FALSE(c.points.empty());
}

TEST_CASE("search with a memory headroom keeps only plans below (1 - headroom) of the GPU's memory",
          "[search]") {
    const Searched& s = searched();
    REQUIRE(best_plan(s.bnb));
    const RunResult& best = *s.bnb.plans.outcomes[*best_plan(s.bnb)].result;
    // A headroom that leaves the best plan just too little memory: it must drop out, and every
    // plan that ranks must leave the headroom free.
    const double headroom = 1.0 - 0.999 * best.peak_memory_bytes / best.memory_capacity_bytes;
    const SearchResult r = search_tiny([&](SearchOptions& o) { o.memory_headroom = headroom; });
    CHECK(r.counts.pruned_memory > s.bnb.counts.pruned_memory);
    REQUIRE(best_plan(r));
    CHECK(plan_text(r.plans, *best_plan(r)) != plan_text(s.bnb.plans, *best_plan(s.bnb)));
    for (std::size_t i = 0; i < r.plans.points.size(); ++i) {
        const auto& outcome = r.plans.outcomes[i];
        if (outcome.status != PointStatus::Ok) continue;
        CHECK(outcome.result->peak_memory_bytes <= (1.0 - headroom) * outcome.result->memory_capacity_bytes);
    }
}

namespace {

// The tiny GPT's search over four plans, with `training_yaml` in place of its training section.
SearchResult four_plan_search(const std::string& training_yaml) {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    std::string text = kTinyGpt;
    const std::string training = "training: {global_batch: 16}\n";
    text.replace(text.find(training), training.size(), training_yaml);  // the training section as given
    const Scenario base = load_scenario_text(text, "tiny.yaml", "", names);
    SearchSpace sp = one_setting(default_search_space(base), false);
    sp.tensor = {2, 4};
    sp.pipeline = {1, 2};
    SearchOptions o;
    o.threads = 1;
    o.keep = 4;
    return run_search(base, sp, names, cache, o);
}

std::string table_of(const SearchResult& r) {
    std::ostringstream out;
    write_search_table(out, r, 4);
    return out.str();
}

}  // namespace

TEST_CASE("the search table shows days, cost and energy to train when the scenario gives them", "[search]") {
    const SearchResult with = four_plan_search(
        "training: {global_batch: 16, tokens: 1.0e9}\ncost: {gpu_hour_usd: 2.5, node_power_kw: 10.2}\n");
    const auto best = best_plan(with);
    REQUIRE(best);
    const RunResult& x = *with.plans.outcomes[*best].result;
    REQUIRE(x.time_to_train_s);
    REQUIRE(x.cost_usd);
    REQUIRE(x.energy_kwh);
    const std::string table = table_of(with);
    INFO(table);
    CHECK(table.find("days   w/ failures   cost USD  energy MWh") != std::string::npos);
    // The best plan's row carries the run's own figures (the code `cuboid run` reports them with),
    // the effective days its goodput line gives among them.
    REQUIRE(x.goodput);
    REQUIRE(x.goodput->effective_time_to_train_s);
    CHECK(*x.goodput->effective_time_to_train_s >= *x.time_to_train_s);
    // The rented cost follows: the typed price, so the cost column's value; no owned cost (the
    // catalog has no purchase price of an A100).
    REQUIRE(x.training_cost);
    REQUIRE(x.training_cost->rented_usd);
    CHECK(*x.training_cost->rented_usd == Approx(*x.cost_usd));
    CHECK_FALSE(x.training_cost->owned_usd);
    CHECK(table.find("owned USD") == std::string::npos);
    const std::string row = fmt::format("  {:>7.3g}  {:>12.3g}  {:>9.3g}  {:>10.3g}  {:>10.3g}\n",
                                        *x.time_to_train_s / 86400.0, *x.goodput->effective_time_to_train_s / 86400.0,
                                        *x.cost_usd, *x.energy_kwh / 1000.0, *x.training_cost->rented_usd);
    CHECK(table.find(row) != std::string::npos);
    CHECK(table.find("cost: GPUs x hours x cost.gpu_hour_usd") != std::string::npos);
    // And the JSON rows carry the same fields as `cuboid run --json`.
    const auto j = search_json(with, 4);
    CHECK(j["plans"][0]["time_to_train_s"].get<double>() == *x.time_to_train_s);
    CHECK(j["plans"][0]["cost_usd"].get<double>() == *x.cost_usd);

    // A purchase price typed: the owned cost too, and the legend lists every input with its source.
    const std::string owned = table_of(four_plan_search(
        "training: {global_batch: 16, tokens: 1.0e9}\ncost: {gpu_hour_usd: 2.5, gpu_purchase_usd: 10000}\n"));
    INFO(owned);
    CHECK(owned.find("rented USD  owned USD") != std::string::npos);
    CHECK(owned.find("cost.gpu_purchase_usd in tiny.yaml") != std::string::npos);
    CHECK(owned.find("DGX A100 6.5 kW") != std::string::npos);  // the catalog's node power
    // Tokens without cost keys: days, and the rented cost at the catalog's price.
    const std::string days_only = table_of(four_plan_search("training: {global_batch: 16, tokens: 1.0e9}\n"));
    CHECK(days_only.find("days") != std::string::npos);
    CHECK(days_only.find("cost USD") == std::string::npos);
    CHECK(days_only.find("rented USD") != std::string::npos);
    CHECK(days_only.find("AWS p4d.24xlarge") != std::string::npos);
    // Neither: the table as before.
    const std::string plain = table_of(four_plan_search("training: {global_batch: 16}\n"));
    CHECK(plain.find("days") == std::string::npos);
    CHECK(plain.find("energy") == std::string::npos);
}

TEST_CASE("search: the tensor degrees reach into a multi-node NVLink domain", "[cli][search][scale_up_domain]") {
    // A100 nodes of 8: powers of two up to the node, as before.
    CHECK(default_search_space(tiny_gpt()).tensor == std::vector<int>{1, 2, 4, 8});
    // A GB200 NVL72 rack (trays of 4, 72 per domain): 8 tiles the rack, 16 does not.
    const Scenario rack = load_scenario_text(
        "name: rack\nmodel: {layers: 8, hidden: 1024, heads: 16, seq_len: 1024, vocab: 32000}\n"
        "cluster: {gpu: gb200, nodes: 18}\ntraining: {global_batch: 72}\n",
        "rack.yaml", "", builtin_name_resolvers());
    CHECK(default_search_space(rack).tensor == std::vector<int>{1, 2, 4, 8});
    CHECK(rack.cluster.gpus_per_node == 4);
    // Two-tray domains of 8: tensor 8 spans both trays.
    Scenario pairs = rack;
    pairs.cluster.scale_up_domain = 8;
    CHECK(default_search_space(pairs).tensor == std::vector<int>{1, 2, 4, 8});
    pairs.cluster.scale_up_domain = 4;
    CHECK(default_search_space(pairs).tensor == std::vector<int>{1, 2, 4});
}

TEST_CASE("the default space's top plans are those of its exhaustive sweep", "[search]") {
    // The space a scenario without a search: section gets, at a small size: the bound prunes it
    // without losing any of the top plans, on several threads taking plans in bound order.
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    const Scenario base = tiny_gpt();
    const SearchSpace space = default_search_space(base);
    CHECK(space.schedule == std::vector<std::string>{"1f1b", "interleaved"});
    CHECK(space.tensor_mode == std::vector<std::string>{"1d"});
    const auto search = [&](bool exhaustive) {
        HardwareCache cache(catalog);
        SearchOptions o;
        o.threads = 2;
        o.keep = 3;
        o.exhaustive = exhaustive;
        return run_search(base, space, names, cache, o);
    };
    const SearchResult bnb = search(false), all = search(true);
    REQUIRE(best_plan(all));
    CHECK(top_times(bnb, 3) == top_times(all, 3));
    CHECK(bnb.counts.pruned_bound > 0);
    // Far fewer candidates than the full space of the same scenario.
    CHECK(all.counts.candidates * 10 < search_candidates(full_search_space(base), base).points.size());
    const SearchCounts& c = bnb.counts;
    CHECK(c.invalid + c.pruned_memory + c.pruned_bound + c.simulated == c.candidates);
}

TEST_CASE("a search stopped by a limit keeps the plans it finished, marked partial", "[search]") {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const Scenario base = tiny_gpt();
    // A memory limit the process already exceeds: the first poll stops the search.
    LongWorkStop stop(nullptr, {std::nullopt, 1.0});
    std::vector<SearchProgress> seen;
    SearchOptions o;
    o.threads = 2;
    o.stop = &stop;
    o.progress = [&](const SearchProgress& p) { seen.push_back(p); };
    const SearchResult r = run_search(base, small_space(base), names, cache, o);
    CHECK(stop.stopped());
    CHECK(stop.signal() == 0);
    CHECK(r.plans.partial());
    CHECK(r.plans.stopped.rfind("memory limit of ", 0) == 0);
    CHECK(r.plans.interrupted_by == 0);
    const SearchCounts& c = r.counts;
    CHECK(c.not_reached > 0);
    CHECK(c.pruned_bound == 0);
    CHECK(c.invalid + c.pruned_memory + c.simulated + c.not_reached == c.candidates);
    // The outputs say so.
    CHECK(search_json(r, 3)["search"]["partial"] == true);
    std::ostringstream table;
    write_search_table(table, r, 3);
    CHECK(table.str().find("partial   memory limit of ") != std::string::npos);
    // The watcher reported progress, the last report at the end of the (cut) simulation phase.
    REQUIRE_FALSE(seen.empty());
    CHECK(seen.back().simulating);
    CHECK(seen.back().candidates == c.candidates);
}

TEST_CASE("the search progress line names what was bounded, simulated and pruned", "[search]") {
    SearchProgress p;
    p.candidates = 640;
    p.bounded = 640;
    p.simulated = 12;
    p.pruned = 580;
    p.best_s = 2.11;
    p.elapsed_s = 41.2;
    p.left_s = 20.4;
    p.simulating = true;
    CHECK(search_progress_text(p) ==
          "search: 640/640 bounded, 12 simulated, 580 pruned, best 2.11 s, 41 s elapsed, ~20 s left at most");
    p.best_s.reset();
    p.left_s.reset();
    p.simulating = false;
    p.bounded = 100;
    CHECK(search_progress_text(p) == "search: 100/640 bounded, 12 simulated, 580 pruned, 41 s elapsed");
}

TEST_CASE("search shares: two ranks' shares, sent as bytes, merge into one process's top plans", "[search]") {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const Scenario base = tiny_gpt();
    const SearchSpace sp = small_space(base);
    SearchOptions o;
    o.threads = 1;
    o.keep = 3;
    const SearchResult one = run_search(base, sp, names, cache, o);
    const SearchCandidates candidates = search_candidates(sp, base);
    std::vector<SearchShare> shares;
    std::size_t checked = 0;
    for (int k = 0; k < 2; ++k) {
        o.share_rank = k;
        o.share_size = 2;
        const SearchResult part = run_search(base, sp, names, cache, o);
        checked += part.counts.candidates;
        for (const std::size_t c : part.candidate) CHECK(c % 2 == static_cast<std::size_t>(k));  // its share only
        shares.push_back(decode_search_share(encode_search_share(part, "")));
    }
    CHECK(checked == candidates.points.size());
    SearchResult merged = merge_search_shares(shares, candidates, one);
    merged.plans = ranked(std::move(merged.plans));
    CHECK(merged.plans.ranks == 2);
    CHECK(merged.counts.candidates == one.counts.candidates);
    CHECK(merged.counts.invalid == one.counts.invalid);
    CHECK(merged.counts.pruned_memory == one.counts.pruned_memory);
    CHECK(merged.counts.simulated >= one.counts.simulated);
    // The 3 fastest plans that ran and fit, in ranking order.
    const auto top3 = [](const SearchResult& r) {
        std::vector<std::size_t> rows;
        for (const std::size_t i : r.plans.order)
            if (r.plans.outcomes[i].status == PointStatus::Ok && rows.size() < 3) rows.push_back(i);
        return rows;
    };
    const auto top_one = top3(one), top_merged = top3(merged);
    REQUIRE(top_one.size() == 3);
    REQUIRE(top_merged.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
        CHECK(merged.plans.points[top_merged[k]] == one.plans.points[top_one[k]]);
        // The same double: the outcome crossed as its 8 bytes.
        CHECK(merged.plans.outcomes[top_merged[k]].result->iteration_time_s ==
              one.plans.outcomes[top_one[k]].result->iteration_time_s);
        CHECK(merged.bound_s[top_merged[k]] == one.bound_s[top_one[k]]);
    }
    // The plans in bound order, as one process takes them.
    CHECK(std::is_sorted(merged.bound_s.begin(), merged.bound_s.end()));
    // A rank that failed: the merge says which.
    shares[1].failure = "bad input on that node";
    CHECK_THROWS_WITH(merge_search_shares(shares, candidates, one), Catch::Contains("rank 1: bad input on that node"));
    CHECK_THROWS(decode_search_share({0x01, 0x02}));
}

TEST_CASE("a search section's bad lists are input errors at their line and key", "[search]") {
    const auto names = builtin_name_resolvers();
    const auto error_of = [&](const std::string& section) {
        try {
            const SearchScenario s = load_search_scenario_text(std::string(kTinyGpt) + "search:\n" + section, "s.yaml", names);
            (void)search_space_of(s);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // The tiny GPT takes lines 1-4 and search: line 5, so the section's first key is on line 6.
    CHECK_THAT(error_of("  tensor: [1, 2]\n  recompute: [full, selective, full]\n"),
               Catch::Contains("s.yaml:7") && Catch::Contains("search.recompute") && Catch::Contains("'full' is listed twice"));
    CHECK_THAT(error_of("  zero_stage: [1, 4]\n"),
               Catch::Contains("s.yaml:6") && Catch::Contains("search.zero_stage") && Catch::Contains("between 0 and 3"));
    CHECK_THAT(error_of("  shard_group: [full, 2, 0]\n"),
               Catch::Contains("search.shard_group") && Catch::Contains("expected 'full' or an integer >= 1, got '0'"));
    CHECK_THAT(error_of("  shard_group: [full, 2, full]\n"), Catch::Contains("'full' is listed twice"));
    CHECK(error_of("  shard_group: [full, 2]\n  zero_stage: [3]\n") == "no error");
}
