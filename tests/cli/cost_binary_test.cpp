// The cost of training through the built `cuboid`: with no cost key typed, `run` and `whatif`
// report the cost rented and owned with each input's source (the catalog's cited figures), in
// the report, the JSON and the CSV; a bad cost key is exit 2 naming file, line and key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/binary_run.hpp"

using cuboid::cli::test::Outcome;
using cuboid::cli::test::run_cuboid;
using nlohmann::json;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / ("cuboid_cost_test_" + name);
    std::ofstream(path) << text;
    return path.string();
}

// One DGX H100 node training a small GPT on 1e9 tokens, no cost key.
std::string h100_scenario(const std::string& cost_lines = "") {
    return write_file("run.yaml", "name: cost\n"
                                  "model:\n"
                                  "  preset: gpt-1.7b\n"
                                  "cluster:\n"
                                  "  gpu: h100-sxm-80gb\n"
                                  "  nodes: 1\n"
                                  "  gpus_per_node: 8\n"
                                  "training:\n"
                                  "  global_batch: 16\n"
                                  "  tokens: 1e9\n"
                                  "parallel:\n"
                                  "  tensor: 8\n" +
                                      cost_lines);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("cuboid run without cost keys reports the cost rented and owned with their sources", "[cli][binary][cost]") {
    const Outcome o = run_cuboid("run '" + h100_scenario() + "'");
    INFO(o.out << o.err);
    REQUIRE(o.code == 0);
    CHECK(has(o.out, "cost      rented "));
    CHECK(has(o.out, "          owned  "));
    CHECK(has(o.out, "AWS p5.48xlarge on-demand"));  // the catalog's dated cloud price
    CHECK(has(o.out, "retrieved 2026-11-09"));
    CHECK(has(o.out, "Uptime Institute"));           // the PUE default's source
    CHECK(has(o.out, "DGX H100 10.2 kW"));           // the node power's source

    const Outcome j = run_cuboid("run '" + h100_scenario() + "' --json -");
    REQUIRE(j.code == 0);
    const json c = json::parse(j.out).at("training_cost");
    const double hours = c.at("hours").get<double>();
    const json& in = c.at("inputs");
    CHECK(c.at("rented_usd").get<double>() == Approx(8 * hours * in.at("gpu_hour_usd").at("value").get<double>()));
    const double capex = 8 * in.at("gpu_purchase_usd").at("value").get<double>() * hours /
                         (in.at("amortisation_years").at("value").get<double>() * 365.25 * 24 *
                          in.at("utilisation").at("value").get<double>());
    const double energy_kwh = in.at("node_power_kw").at("value").get<double>() * in.at("pue").at("value").get<double>() * hours;
    CHECK(c.at("owned_capex_usd").get<double>() == Approx(capex));
    CHECK(c.at("owned_energy_kwh").get<double>() == Approx(energy_kwh));
    CHECK(c.at("owned_usd").get<double>() ==
          Approx(capex + energy_kwh * in.at("power_usd_per_kwh").at("value").get<double>()));
    for (auto it = in.begin(); it != in.end(); ++it) {
        INFO(it.key());
        CHECK_FALSE(it.value().at("source").get<std::string>().empty());
    }
}

TEST_CASE("cuboid run: a typed cost key replaces the catalog's figure and is named as the source", "[cli][binary][cost]") {
    const Outcome j = run_cuboid("run '" + h100_scenario("cost:\n  pue: 1.2\n  gpu_purchase_usd: 20000\n") + "' --json -");
    REQUIRE(j.code == 0);
    const json in = json::parse(j.out).at("training_cost").at("inputs");
    CHECK(in.at("pue").at("value").get<double>() == 1.2);
    CHECK(has(in.at("pue").at("source").get<std::string>(), "cost.pue in "));
    CHECK(in.at("gpu_purchase_usd").at("value").get<double>() == 20000.0);
}

TEST_CASE("cuboid run: a cost key out of its range is exit 2 naming file, line and key", "[cli][binary][cost]") {
    for (const std::string bad : {"  utilisation: 0\n", "  pue: 0.5\n", "  amortisation_years: -3\n",
                                  "  power_usd_per_kwh: 11\n", "  gpu_purchase_usd: abc\n"}) {
        INFO(bad);
        const std::string path = h100_scenario("cost:\n" + bad);
        const Outcome o = run_cuboid("run '" + path + "'");
        CHECK(o.code == 2);
        const std::string key = "cost." + bad.substr(2, bad.find(':') - 2);
        CHECK(has(o.err, path + ":14"));  // `cost:` is line 13, the key line 14
        CHECK(has(o.err, key));
    }
}

TEST_CASE("cuboid whatif without cost keys reports both costs with sources, in the table and the CSV", "[cli][binary][cost]") {
    const std::string study = write_file(
        "study.yaml",
        "name: cost-study\n"
        "search: {tensor: [8], pipeline: [1], micro_batch: [1], schedule: [1f1b], recompute: [full], zero_stage: [1]}\n"
        "models:\n"
        "  - {name: gpt, preset: gpt-1.7b, tokens: 1e9, global_batch: 16}\n"
        "clusters:\n"
        "  - {name: h100, gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvswitch, node_overhead_w: 4600}\n");
    const std::string csv = (std::filesystem::temp_directory_path() / "cuboid_cost_test.csv").string();
    const Outcome o = run_cuboid("whatif '" + study + "' --csv '" + csv + "'");
    INFO(o.out << o.err);
    REQUIRE(o.code == 0);
    CHECK(has(o.out, "cost      rented "));
    CHECK(has(o.out, "          owned  "));
    CHECK(has(o.out, "8 x 700 W (catalog TDP) + 4600 W node overhead"));
    CHECK(has(o.out, "AWS p5.48xlarge"));
    std::ifstream in(csv);
    std::string header, row;
    std::getline(in, header);
    std::getline(in, row);
    for (const char* column : {"training_cost.rented_usd", "training_cost.owned_usd",
                               "training_cost.inputs.gpu_purchase_usd.value",
                               "training_cost.inputs.gpu_purchase_usd.source", "training_cost.inputs.pue.source"})
        CHECK(has(header, column));
    CHECK(has(row, "street estimate mid-2026"));
}
