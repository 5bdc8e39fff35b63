// The cost of training through the built `cuboid`: with no cost key typed, `run` and `whatif`
// report the cost rented and owned with each input's source (the catalog's cited figures), in
// the report, the JSON and the CSV; a bad cost key is exit 2 naming file, line and key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/binary_run.hpp"
#include "tests/scratch_dir.hpp"

using cuboid::cli::test::Outcome;
using cuboid::cli::test::run_cuboid;
using nlohmann::json;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
    return cuboid::cli::test::write_temp_file("cuboid_cost_test_", name, text);
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
    const std::string csv = cuboid::scratch::file("cuboid_cost_test.csv").string();
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

namespace {

// Splits one CSV line (fields with commas are quoted, quotes doubled).
std::vector<std::string> csv_fields(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char ch = line[i];
        if (ch == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
            fields.back() += '"';
            ++i;
        } else if (ch == '"') {
            quoted = !quoted;
        } else if (ch == ',' && !quoted) {
            fields.emplace_back();
        } else {
            fields.back() += ch;
        }
    }
    return fields;
}

// The rows of a CSV text as maps from the header's names.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    const auto header = csv_fields(line);
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
        const auto fields = csv_fields(line);
        std::map<std::string, std::string> row;
        for (std::size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
        rows.push_back(row);
    }
    return rows;
}

// The owned cost as training_cost defines it: GPUs x hours x purchase / (amortisation hours x
// utilisation) + nodes x node power x PUE x hours x power price.
double owned_closed_form(double gpus, double nodes, double hours) {
    const double purchase = 20000, years = 4, utilisation = 0.5, node_kw = 10, pue = 1.2, usd_per_kwh = 0.1;
    return gpus * hours * purchase / (years * 365.25 * 24 * utilisation) + nodes * node_kw * pue * hours * usd_per_kwh;
}

const char* const kTypedCost = "cost:\n  gpu_hour_usd: 2\n  gpu_purchase_usd: 20000\n  node_power_kw: 10\n"
                               "  power_usd_per_kwh: 0.1\n  pue: 1.2\n  amortisation_years: 4\n  utilisation: 0.5\n";

}  // namespace

TEST_CASE("cuboid sweep --csv carries the rented and owned cost, with failures too, each input with its source",
          "[cli][binary][cost]") {
    const std::string path = h100_scenario(std::string(kTypedCost) + "sweep:\n  parallel.tensor: [4, 8]\n");
    const Outcome o = run_cuboid("sweep '" + path + "' --quiet --csv -");
    INFO(o.out << o.err);
    REQUIRE(o.code == 0);
    const auto rows = csv_rows(o.out);
    REQUIRE(rows.size() == 2);
    for (const auto& row : rows) {
        INFO(row.at("parallel.tensor"));
        const double hours = std::stod(row.at("time_to_train_s")) / 3600.0;
        CHECK(std::stod(row.at("training_cost.rented_usd")) == Approx(8 * hours * 2));
        CHECK(std::stod(row.at("training_cost.owned_usd")) == Approx(owned_closed_form(8, 1, hours)));
        CHECK(has(row.at("training_cost.inputs.gpu_purchase_usd.source"), "cost.gpu_purchase_usd in "));
        CHECK(std::stod(row.at("training_cost.inputs.utilisation.value")) == 0.5);
        // With failures: the same formulas over the effective time (goodput < 1 makes it longer).
        const double with_failures = std::stod(row.at("goodput.effective_time_to_train_s")) / 3600.0;
        CHECK(with_failures > hours);
        CHECK(std::stod(row.at("goodput.goodput")) == Approx(hours / with_failures));
        CHECK(std::stod(row.at("training_cost_with_failures.rented_usd")) == Approx(8 * with_failures * 2));
        CHECK(std::stod(row.at("training_cost_with_failures.owned_usd")) ==
              Approx(owned_closed_form(8, 1, with_failures)));
    }
    // The JSON rows carry the same objects.
    const json j = json::parse(run_cuboid("sweep '" + path + "' --quiet --json -").out);
    CHECK(j.at(0).at("training_cost_with_failures").at("owned_usd").get<double>() ==
          Approx(owned_closed_form(8, 1, j.at(0).at("goodput").at("effective_time_to_train_s").get<double>() / 3600)));
}

TEST_CASE("cuboid sweep --csv: a price the catalog lacks is named as missing, never 0", "[cli][binary][cost]") {
    // The catalog has no purchase price for the A100 (hardware_models/catalog/economics.yaml).
    std::string text = "name: a100\nmodel:\n  preset: gpt-1.7b\ncluster:\n  gpu: a100-sxm-80gb\n  nodes: 1\n"
                       "  gpus_per_node: 8\ntraining:\n  global_batch: 16\n  tokens: 1e9\nparallel:\n  tensor: 8\n"
                       "sweep:\n  parallel.tensor: [8]\n";
    const Outcome o = run_cuboid("sweep '" + write_file("a100.yaml", text) + "' --quiet --csv -");
    REQUIRE(o.code == 0);
    const auto row = csv_rows(o.out).at(0);
    CHECK(row.at("training_cost.owned_usd").empty());
    CHECK(row.at("training_cost.owned_capex_usd").empty());
    CHECK(row.at("training_cost.inputs.gpu_purchase_usd.value").empty());
    CHECK(has(row.at("training_cost.inputs.gpu_purchase_usd.source"), "no purchase per GPU in the catalog"));
    CHECK(has(row.at("training_cost.inputs.gpu_purchase_usd.source"), "cost.gpu_purchase_usd"));
    CHECK_FALSE(row.at("training_cost.rented_usd").empty());  // the A100 has a cloud price
}

namespace {

// H100 and A100 (no purchase price in the catalog) and a second, larger H100 cluster.
std::string rank_study() {
    return write_file(
        "rank.yaml",
        "name: rank-study\n"
        "search: {tensor: [8], pipeline: [1], micro_batch: [1], schedule: [1f1b], recompute: [full], zero_stage: [1]}\n"
        "models:\n"
        "  - {name: gpt, preset: gpt-1.7b, tokens: 1e9, global_batch: 16}\n"
        "clusters:\n"
        "  - {name: a100, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvswitch, node_overhead_w: 3300}\n"
        "  - {name: h100-2, gpu: h100-sxm-80gb, nodes: 2, gpus_per_node: 8, intra_node: nvswitch,\n"
        "     inter_node: {kind: infiniband, nic_gbps: 400, nics_per_node: 8, topology: fat-tree}, node_overhead_w: 4600}\n"
        "  - {name: h100, gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvswitch, node_overhead_w: 4600}\n");
}

}  // namespace

TEST_CASE("cuboid whatif --rank-by orders each model's clusters by the criterion, missing figures last",
          "[cli][binary][cost]") {
    const std::string study = rank_study();
    for (const std::string criterion : {"time", "rented-cost", "owned-cost", "energy"}) {
        INFO(criterion);
        const Outcome o = run_cuboid("whatif '" + study + "' --threads 2 --rank-by " + criterion + " --json -");
        INFO(o.err);
        REQUIRE(o.code == 0);
        const json j = json::parse(o.out);
        CHECK(j.at("rank_by") == criterion);
        // The figure each criterion ranks by, from the row itself; null where it is missing.
        auto value = [&](const json& row) -> std::optional<double> {
            const json& cost = row.at("training_cost");
            const json v = criterion == "time"          ? row.at("time_to_train_s")
                           : criterion == "rented-cost" ? cost.at("rented_usd")
                           : criterion == "owned-cost"  ? cost.at("owned_usd")
                                                        : row.at("energy_kwh");
            return v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
        };
        std::vector<std::pair<double, int>> ranked;  // (value, rank)
        for (const json& row : j.at("rows")) {
            if (!value(row)) {
                CHECK(row.at("rank").is_null());
                continue;
            }
            ranked.emplace_back(*value(row), row.at("rank").get<int>());
        }
        std::sort(ranked.begin(), ranked.end());
        for (std::size_t k = 0; k < ranked.size(); ++k) CHECK(ranked[k].second == static_cast<int>(k) + 1);
        const std::string winner_key = criterion == "rented-cost"  ? "cost"
                                       : criterion == "owned-cost" ? "owned_cost"
                                                                   : criterion;
        const json& first = *std::find_if(j.at("rows").begin(), j.at("rows").end(),
                                          [](const json& row) { return row.at("rank") == 1; });
        CHECK(j.at("winners").at(0).at(winner_key) == first.at("cluster"));
    }
    // Owned cost: the A100 has no purchase price, so no owned cost and no rank; the table lists it
    // last with "no price", the H100 clusters first in order of owned cost.
    const Outcome table = run_cuboid("whatif '" + study + "' --threads 2 --rank-by owned-cost");
    INFO(table.out);
    REQUIRE(table.code == 0);
    CHECK(has(table.out, "(ranked by owned-cost)"));
    const auto h100 = table.out.find("\nh100 "), h100_2 = table.out.find("\nh100-2 "), a100 = table.out.find("\na100 ");
    REQUIRE(a100 != std::string::npos);
    CHECK(std::max(h100, h100_2) < a100);
    CHECK(has(table.out.substr(a100, table.out.find('\n', a100 + 1) - a100), "no price"));
    const json owned = json::parse(run_cuboid("whatif '" + study + "' --threads 2 --rank-by owned-cost --json -").out);
    for (const json& row : owned.at("rows"))
        if (row.at("cluster") == "a100") CHECK(row.at("rank").is_null());
}

TEST_CASE("cuboid whatif --rank-by: a bad value or another command is exit 2 naming the allowed values",
          "[cli][binary][cost]") {
    const Outcome o = run_cuboid("whatif '" + rank_study() + "' --rank-by cheapest");
    CHECK(o.code == 2);
    CHECK(has(o.err, "--rank-by"));
    CHECK(has(o.err, "time, rented-cost, owned-cost, energy"));
    CHECK(has(o.err, "cheapest"));
    const Outcome sweep = run_cuboid("sweep '" + h100_scenario("sweep:\n  parallel.tensor: [8]\n") + "' --rank-by time");
    CHECK(sweep.code == 2);
    CHECK(has(sweep.err, "rank-by"));
}

TEST_CASE("cuboid whatif shows each cluster's goodput, days and costs with failures, as its JSON and CSV give them",
          "[cli][binary][cost]") {
    const std::string study = rank_study();
    const json j = json::parse(run_cuboid("whatif '" + study + "' --threads 2 --json -").out);
    const Outcome table = run_cuboid("whatif '" + study + "' --threads 2");
    INFO(table.out);
    REQUIRE(table.code == 0);
    const auto section = table.out.find("\nwith failures (interruptions, checkpoints and restarts)\n");
    REQUIRE(section != std::string::npos);
    const std::string failures = table.out.substr(section, table.out.find("\nfastest", section) - section);
    // A table cell: the value to 4 significant digits between spaces.
    auto g4 = [](double v) {
        char text[34];
        std::snprintf(text, sizeof text, " %.4g ", v);
        return std::string(text);
    };
    for (const json& row : j.at("rows")) {
        const std::string cluster = row.at("cluster");
        INFO(cluster);
        const json& goodput = row.at("goodput");
        const double ideal_s = row.at("time_to_train_s").get<double>();
        const double with_failures_s = goodput.at("effective_time_to_train_s").get<double>();
        CHECK(with_failures_s > ideal_s);
        CHECK(goodput.at("goodput").get<double>() == Approx(ideal_s / with_failures_s));
        // The rented cost scales with the time the machines are held.
        const double rented = row.at("training_cost").at("rented_usd").get<double>();
        const double rented_failures = row.at("training_cost_with_failures").at("rented_usd").get<double>();
        CHECK(rented_failures == Approx(rented * with_failures_s / ideal_s));
        const auto at = failures.find("\n" + cluster + " ");
        REQUIRE(at != std::string::npos);
        const std::string line = failures.substr(at + 1, failures.find('\n', at + 1) - at - 1);
        CHECK(has(line, g4(rented_failures)));
        const json& owned = row.at("training_cost_with_failures").at("owned_usd");
        CHECK(has(line, owned.is_null() ? std::string(" no price ") : g4(owned.get<double>())));
    }
    // The CSV carries goodput beside the costs with failures.
    const auto rows = csv_rows(run_cuboid("whatif '" + study + "' --threads 2 --csv -").out);
    REQUIRE(rows.size() == j.at("rows").size());
    for (const auto& row : rows) {
        CHECK(std::stod(row.at("goodput.goodput")) < 1.0);
        CHECK(std::stod(row.at("goodput.effective_time_to_train_s")) > 0.0);
        CHECK_FALSE(row.at("training_cost_with_failures.rented_usd").empty());
    }
}
