// The parallel degrees of `cuboid search` are the layout's axes: each view of the ranks chooses
// every axis of its grid but one, which takes the rest, and its choices are every way of splitting
// the view's ranks that the model and batch allow, each once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/search_space.hpp"
#include "strategies/layout.hpp"

using namespace cuboid;
using namespace cuboid::cli;

namespace {

std::multiset<std::string> view_axes(const DegreeView& v) {
    std::multiset<std::string> names{std::string(v.remainder)};
    for (const DegreeAxis& a : v.chosen) names.insert(std::string(a.axis));
    return names;
}

std::multiset<std::string> grid_axes(const RankGrid& g) {
    std::multiset<std::string> names;
    for (const GridAxis& a : g.axes()) names.insert(std::string(a.name));
    return names;
}

// A 4-layer MoE model with 8 experts, sequences of 1,000 tokens (2c divides them for c = 1, 2, 4
// but not 8), 12 sequences per iteration, on 4 nodes of 8 GPUs.
Scenario moe_base() {
    return load_scenario_text(
        "model: {layers: 4, hidden: 512, heads: 8, seq_len: 1000, vocab: 1000, experts: 8, experts_per_token: 2,"
        " expert_ffn_hidden: 512}\n"
        "cluster: {gpu: h100-sxm-80gb, nodes: 4, gpus_per_node: 8}\n"
        "training: {global_batch: 12}\n",
        "moe.yaml", "", builtin_name_resolvers());
}

}  // namespace

TEST_CASE("the search's degree views cover the axes of the layout's grids", "[search][degrees]") {
    // Every axis of the plan's grid is chosen by the search or takes the rest, exactly once.
    CHECK(view_axes(plan_degrees()) == grid_axes(Layout{}.grid()));
    // The expert view regroups a stage's ranks: every axis of the expert grid but the pipeline's.
    Layout l;
    l.experts = true;
    std::multiset<std::string> expert = grid_axes(l.expert_grid());
    expert.erase(std::string(axis::kPipeline));
    CHECK(view_axes(expert_degrees()) == expert);
    // Each chosen axis is a key of the search section, which sets the values searched along it.
    const std::vector<std::string> keys = search_section_keys();
    for (const DegreeView* v : {&plan_degrees(), &expert_degrees()})
        for (const DegreeAxis& a : v->chosen) {
            INFO(a.axis);
            CHECK(std::find(keys.begin(), keys.end(), std::string(a.axis)) != keys.end());
            SearchSpace sp;
            read_search_section(YAML::Load(std::string(a.axis) + ": [3, 5]"), "s.yaml", "search", sp);
            CHECK(sp.*a.values == std::vector<int>{3, 5});
        }
}

TEST_CASE("degree choices are every split of the ranks the rules allow, once, in enumeration order",
          "[search][degrees]") {
    const Scenario base = moe_base();
    SearchSpace sp = full_search_space(base);
    sp.tensor = {1, 2, 4, 8, 3};
    sp.pipeline = {1, 2, 4};
    sp.context = {1, 2, 4, 8};
    const std::int64_t gpus = base.cluster.gpus();  // 32
    std::vector<std::tuple<int, int, int, int>> expected;
    for (const int t : sp.tensor)
        for (const int p : sp.pipeline)
            for (const int c : sp.context) {
                if (gpus % (t * p * c) != 0) continue;
                const int d = static_cast<int>(gpus / (t * p * c));
                if (base.model.seq_len % (2 * c) != 0 || d > base.training.global_batch) continue;
                expected.emplace_back(t, p, c, d);
            }
    std::vector<std::tuple<int, int, int, int>> got;
    for (const DegreeChoice& ch : degree_choices(plan_degrees(), sp, base, gpus))
        got.emplace_back(ch.at(axis::kTensor), ch.at(axis::kPipeline), ch.at(axis::kContext), ch.at(axis::kData));
    CHECK(got == expected);
    // The rules bite: no context 8 (1,000 tokens are not 16 chunks), no tensor 3, no 32 replicas
    // of a 12-sequence batch.
    CHECK_FALSE(got.empty());
    for (const auto& [t, p, c, d] : got) {
        CHECK(c != 8);
        CHECK(t != 3);
        CHECK(d <= 12);
    }
    CHECK_THROWS_AS(degree_choices(plan_degrees(), sp, base, gpus).front().at(axis::kExpert), std::logic_error);

    // The expert view over a stage of 8 ranks: expert degrees divide the 8 experts.
    sp.expert = {1, 2, 4, 8, 16};
    sp.expert_tensor = {1, 2};
    std::vector<std::tuple<int, int, int>> experts;
    for (const DegreeChoice& ch : degree_choices(expert_degrees(), sp, base, 8))
        experts.emplace_back(ch.at(axis::kExpert), ch.at(axis::kExpertTensor), ch.at(axis::kExpertData));
    CHECK(experts == std::vector<std::tuple<int, int, int>>{
                         {1, 1, 8}, {1, 2, 4}, {2, 1, 4}, {2, 2, 2}, {4, 1, 2}, {4, 2, 1}, {8, 1, 1}});
}

TEST_CASE("a search plan's text reads its degrees by their keys", "[search][degrees]") {
    const Scenario base = moe_base();
    SearchSpace sp = full_search_space(base);
    sp.tensor = {2};
    sp.pipeline = {2};
    sp.context = {2};
    sp.context_mode = {"all-gather"};
    sp.micro_batch = {3};
    sp.schedule = {"interleaved"};
    sp.virtual_stages = {2};
    sp.recompute = {"selective"};
    sp.tensor_mode = {"1d"};
    sp.overlap_chunks = {2};
    sp.sequence_parallel = {true};
    sp.zero_stage = {1};
    sp.expert = {4};
    sp.expert_tensor = {2};
    const SearchCandidates c = search_candidates(sp, base);
    REQUIRE(c.points.size() == 1);  // 32 GPUs / (2 x 2 x 2) = data 4; 12 sequences = 3 x 4
    SweepResult r;
    r.axes = c.axes;
    r.points = c.points;
    CHECK(plan_text(r, 0) == "t2 p2 c2(all-gather) d4 mb3 interleaved(v2) selective 1d overlap2 sp zero1 ep4 etp2");
    // A dense model's search has no expert axes, and its text no expert degrees.
    r.axes = search_axes(false);
    r.points[0].resize(r.axes.size());
    CHECK(plan_text(r, 0) == "t2 p2 c2(all-gather) d4 mb3 interleaved(v2) selective 1d overlap2 sp zero1");
}
