// `cuboid whatif`: the study's errors at file:line:key, and the figures of a small study derived
// from each pair's best plan.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "hardware_models/economics.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/whatif_study.hpp"
#include "strategies/training_cost.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {

std::string write_study(const std::string& name, const std::string& text) {
    const auto path = cuboid::scratch::file("cuboid-whatif-test-" + name);
    std::ofstream(path) << text;
    return path.string();
}

// A small GPT on one or two nodes of 40 GB A100s, a space of 4 plans (fast to search).
constexpr const char* kHead =
    "name: tiny-study\n"
    "pue: 1.5\n"
    "search: {tensor: [2, 8], pipeline: [1, 2], micro_batch: [1], schedule: [1f1b], recompute: [none],\n"
    "         tensor_mode: [1d], overlap_chunks: [1], sequence_parallel: [false], zero_stage: [0]}\n";
constexpr const char* kModels =
    "models:\n"
    "  - {name: tiny, layers: 4, hidden: 1024, heads: 16, seq_len: 1024, vocab: 32000,\n"
    "     tokens: 1e9, global_batch: 16}\n";
constexpr const char* kClusters =
    "clusters:\n"
    "  - {name: one-node, gpu: a100-sxm-40gb, nodes: 1, gpus_per_node: 8, gpu_hour_usd: 2.0,\n"
    "     node_overhead_w: 3000}\n"
    "  - {name: two-nodes, gpu: a100-sxm-40gb, nodes: 2, gpus_per_node: 8, gpu_hour_usd: 1.0,\n"
    "     node_power_kw: 5.0}\n";

InputError study_error(const std::string& text) {
    return input_error_of([&] { load_study_text(text, "s.yaml", builtin_name_resolvers()); });
}

}  // namespace

TEST_CASE("study errors name the file, the line and the key", "[whatif]") {
    SECTION("no cluster") {
        const InputError e = study_error(std::string(kHead) + kModels);
        CHECK(e.where().file == "s.yaml");
        CHECK(e.where().key == "clusters");
        const InputError empty = study_error(std::string(kHead) + kModels + "clusters: []\n");
        // kHead is 4 lines and kModels 3, so `clusters: []` is line 8.
        CHECK(empty.where().line == 8);
    }
    SECTION("unknown GPU") {
        const InputError e = study_error(std::string(kHead) + kModels +
                                         "clusters:\n  - {name: x, gpu: z100, nodes: 1, gpu_hour_usd: 1}\n");
        CHECK(e.where().key == "clusters[0].gpu");
        CHECK(e.where().line == 9);  // 4 + 3 lines before `clusters:` (line 8), the entry after it
    }
    SECTION("missing token budget") {
        const InputError e =
            study_error(std::string(kHead) + "models:\n  - {name: m, preset: gpt-1.7b, global_batch: 8}\n" + kClusters);
        CHECK(e.where().key == "models[0].tokens");
        CHECK(e.where().line == 6);  // after the 4 lines of kHead and `models:`
    }
    SECTION("the command exits 2 with the location") {
        const std::string path = write_study("nocluster.yaml", std::string(kHead) + kModels);
        const Outcome o = run_cli({"whatif", path});
        CHECK(o.code == 2);
        CHECK(o.err.find(path + ": 'clusters': missing") != std::string::npos);
    }
}

TEST_CASE("whatif figures follow from the best plan of each pair", "[whatif]") {
    const std::string path = write_study("tiny.yaml", std::string(kHead) + kModels + kClusters);
    const Outcome o = run_cli({"whatif", path, "--threads", "2", "--json", "-"});
    INFO(o.err);
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    REQUIRE(j["rows"].size() == 2);
    for (const auto& row : j["rows"]) {
        REQUIRE(row["status"] == "ok");
        // tokens / (tokens per second); GPU-hours; cost at the price; energy at nodes x power x PUE.
        const double hours = 1e9 / row["tokens_per_s"].get<double>() / 3600.0;
        CHECK(row["time_to_train_s"].get<double>() == Approx(hours * 3600.0));
        CHECK(row["gpu_hours"].get<double>() == Approx(row["gpus"].get<int>() * hours));
        CHECK(row["cost_usd"].get<double>() == Approx(row["gpu_hours"].get<double>() * row["gpu_hour_usd"].get<double>()));
        CHECK(row["energy_kwh"].get<double>() ==
              Approx(row["nodes"].get<int>() * row["node_power_kw"].get<double>() * hours * 1.5));
        CHECK(row["plan"]["data"].get<int>() * row["plan"]["tensor"].get<int>() * row["plan"]["pipeline"].get<int>() ==
              row["gpus"].get<int>());
    }
    // One node: 8 x 400 W catalog TDP + 3000 W = 6.2 kW; two nodes: the 5 kW given.
    CHECK(j["rows"][0]["node_power_kw"].get<double>() == Approx(6.2));
    CHECK(j["rows"][1]["node_power_kw"].get<double>() == Approx(5.0));
    // Winners are the rows with the lowest figure of each criterion.
    const auto& rows = j["rows"];
    auto lowest = [&](const char* field) {
        return rows[0][field].get<double>() <= rows[1][field].get<double>() ? rows[0]["cluster"] : rows[1]["cluster"];
    };
    CHECK(j["winners"][0]["time"] == lowest("time_to_train_s"));
    CHECK(j["winners"][0]["cost"] == lowest("cost_usd"));
    CHECK(j["winners"][0]["energy"] == lowest("energy_kwh"));
}

TEST_CASE("every study in scenarios/studies loads", "[whatif]") {
    int count = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(CUBOID_SOURCE_DIR) / "scenarios" / "studies")) {
        if (entry.path().extension() != ".yaml") continue;
        INFO(entry.path().string());
        const Study s = load_study_file(entry.path().string(), builtin_name_resolvers());
        CHECK_FALSE(s.clusters.empty());
        for (const auto& c : s.clusters) CHECK(c.node_power_kw > 0.0);
        ++count;
    }
    CHECK(count >= 1);
}

TEST_CASE("a study's own errors: empty lists, PUE, duplicate keys, a scalar where a map is wanted", "[whatif]") {
    const std::string models = kModels, clusters = kClusters;
    const InputError no_models = study_error(std::string(kHead) + "models: []\n" + clusters);
    CHECK(no_models.where().key == "models");
    CHECK(no_models.where().line == 5);
    for (const std::string pue : {"-1", "0.5", "1e300", ".nan", "[1]"}) {
        const InputError e = study_error("pue: " + pue + "\n" + models + clusters);
        CHECK(e.where().key == "pue");
        CHECK(e.where().line == 1);
    }
    const InputError twice = study_error(std::string(kHead) + models + clusters + "pue: 2\n");
    CHECK(twice.where().key == "pue");
    CHECK_THAT(twice.what(), Catch::Contains("duplicate key"));
    const InputError search_dup = study_error("search: {tensor: [1], tensor: [2]}\n" + models + clusters);
    CHECK(search_dup.where().key == "search.tensor");
    const InputError scalar = study_error("search: 4\n" + models + clusters);
    CHECK(scalar.where().key == "search");
    const InputError max_gpus = study_error("search: {max_gpus: [8, 16]}\n" + models + clusters);
    CHECK(max_gpus.where().key == "search.max_gpus");
    const InputError entry = study_error(models + "clusters: [3]\n");
    CHECK(entry.where().key == "clusters[0]");
}

TEST_CASE("a study without name: or search: runs (both are optional)", "[whatif]") {
    // One GPU: the default search space holds a single plan, so the run is quick.
    const std::string path = write_study("bare.yaml",
                                         "models:\n"
                                         "  - {name: m, layers: 2, hidden: 256, heads: 4, seq_len: 256, vocab: 1000,\n"
                                         "     tokens: 1e9, global_batch: 4}\n"
                                         "clusters:\n"
                                         "  - {name: c, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 1, gpu_hour_usd: 1}\n");
    const Study s = load_study_file(path, builtin_name_resolvers());
    CHECK(s.name == "cuboid-whatif-test-bare");
    const Outcome o = run_cli({"whatif", path, "--json", "-"});
    INFO(o.err);
    CHECK(o.code == 0);
}

TEST_CASE("a study's model may be a mixture of experts with heads of their own size, searched over expert degrees",
          "[whatif]") {
    const std::string path = write_study("moe.yaml",
                                         "search: {tensor: [1], pipeline: [1], micro_batch: [1], expert: [2, 4],\n"
                                         "         sequence_parallel: [false], zero_stage: [1], recompute: [none]}\n"
                                         "models:\n"
                                         "  - {name: m, layers: 2, hidden: 256, heads: 4, kv_heads: 2, head_dim: 128,\n"
                                         "     seq_len: 256, vocab: 1000, swiglu: true, experts: 8, experts_per_token: 2,\n"
                                         "     expert_ffn_hidden: 128, shared_experts: 1, dense_layers: 1,\n"
                                         "     moe_load_imbalance: 1.5, tokens: 1e9, global_batch: 8}\n"
                                         "clusters:\n"
                                         "  - {name: c, gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 4, gpu_hour_usd: 1}\n");
    const Study s = load_study_file(path, builtin_name_resolvers());
    REQUIRE(s.models.size() == 1);
    const ModelSpec& m = s.models[0].settings.model;
    CHECK(m.head_dim == 128);
    CHECK(m.experts == 8);
    CHECK(m.top_k() == 2);
    CHECK(m.expert_ffn_hidden == 128);
    CHECK(m.shared_experts == 1);
    CHECK(m.dense_layers == 1);
    CHECK(m.moe_load_imbalance == 1.5);
    const Outcome o = run_cli({"whatif", path, "--json", "-", "--quiet"});
    INFO(o.err);
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    INFO(o.out);
    REQUIRE(j["rows"].size() == 1);
    CHECK(j["rows"][0]["status"] == "ok");
    const int ep = j["rows"][0]["plan"]["expert"].get<int>();
    CHECK((ep == 2 || ep == 4));  // the plan is one of the space's expert-parallel ones
}

TEST_CASE("the default study has a rented price for every cluster and an owned cost where the catalog prices the GPU",
          "[whatif][cost]") {
    const std::string path = std::string(CUBOID_SOURCE_DIR) + "/scenarios/studies/llm70b-2t.yaml";
    const Study s = load_study_file(path, builtin_name_resolvers());
    int owned = 0;
    for (const StudyCluster& c : s.clusters) {
        INFO(c.name);
        CHECK_FALSE(c.settings.cost.gpu_hour_usd);  // no price typed: the catalog's
        const Scenario pair = pair_scenario(s, c, s.models.front());
        const CostInputs in = resolve_cost_inputs(pair, hw::Economics::builtin());
        REQUIRE(in.gpu_hour_usd);
        CHECK(in.gpu_hour_usd->value == c.gpu_hour_usd);
        CHECK(in.gpu_hour_usd->source.find("hw §7.1") != std::string::npos);
        if (in.purchase_usd_per_gpu && in.node_power_kw) ++owned;
    }
    CHECK(owned >= 5);  // the H100, H200 and B200 clusters (no purchase price was read for A100)
}

TEST_CASE("the studies under scenarios/studies type no cost, power or PUE key: every figure is the catalog's, cited",
          "[whatif][cost]") {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(CUBOID_SOURCE_DIR) / "scenarios" / "studies")) {
        if (entry.path().extension() != ".yaml") continue;
        INFO(entry.path().string());
        const Study s = load_study_file(entry.path().string(), builtin_name_resolvers());
        CHECK_FALSE(s.pue_given);
        CHECK(s.pue == hw::Economics::builtin().defaults.pue.value);
        for (const StudyCluster& c : s.clusters) {
            INFO(c.name);
            CHECK_FALSE(c.settings.cost.gpu_hour_usd);
            CHECK_FALSE(c.settings.cost.gpu_purchase_usd);
            CHECK(c.power_from_catalog);
            CHECK(c.power_source.find("hw §7.3") != std::string::npos);
        }
    }
}

TEST_CASE("a study cluster without power keys draws the catalog's system power; a study without pue the catalog's PUE",
          "[whatif][cost]") {
    const std::string text = std::string(kHead).substr(std::string(kHead).find("search:")) + kModels +
                             "clusters:\n"
                             "  - {name: h100, gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 4}\n"
                             "  - {name: mi300x, gpu: mi300x-192gb, nodes: 1, gpus_per_node: 8}\n"
                             "  - {name: typed, gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 8, node_overhead_w: 1000}\n";
    const Study s = load_study_text(text, "s.yaml", builtin_name_resolvers());
    // DGX H100: 10.2 kW for 8 GPUs (economics.yaml), so 5.1 kW for a node of 4, with the catalog's source.
    CHECK(s.clusters[0].node_power_kw == Approx(10.2 / 8 * 4));
    CHECK(s.clusters[0].power_source.find("DGX H100") != std::string::npos);
    CHECK(s.clusters[0].power_from_catalog);
    // No system power in the catalog for the MI300X: its GPUs' TDP alone (750 W), said so.
    CHECK(s.clusters[1].node_power_kw == Approx(8 * 0.75));
    CHECK(s.clusters[1].power_source.find("no system power for mi300x-192gb") != std::string::npos);
    // A power key of the study wins over the catalog: 8 x 700 W TDP + 1000 W.
    CHECK(s.clusters[2].node_power_kw == Approx(6.6));
    CHECK_FALSE(s.clusters[2].power_from_catalog);
    CHECK_FALSE(s.pue_given);
    CHECK(s.pue == Approx(1.58));
    CHECK(s.pue_source.find("Uptime") != std::string::npos);

    // The energy column and the owned cost take the same PUE and node power, each with its source.
    const std::string path = write_study("catalog-power.yaml", text);
    const Outcome o = run_cli({"whatif", path, "--threads", "2", "--json", "-"});
    INFO(o.err);
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    CHECK(j["pue"].get<double>() == Approx(1.58));
    const auto& h100 = j["rows"][0];
    const auto& in = h100["training_cost"]["inputs"];
    CHECK(in["pue"]["value"].get<double>() == Approx(1.58));
    CHECK(in["node_power_kw"]["value"].get<double>() == Approx(5.1));
    CHECK(in["node_power_kw"]["source"].get<std::string>().find("hw §7.3 R[P20]") != std::string::npos);
    CHECK(h100["energy_kwh"].get<double>() == Approx(h100["training_cost"]["owned_energy_kwh"].get<double>()));
}
