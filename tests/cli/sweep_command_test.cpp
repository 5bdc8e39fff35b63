// `cuboid sweep` in process: the rows of every point, their order, independence of the thread
// count, the CSV and JSON documents, and the errors of a sweep request.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "strategies/cli/cli_main.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid::cli;
using namespace cuboid::cli::test;
using nlohmann::json;

namespace {


// GPT 7.5B on one node of eight 40 GB A100s, 4 x 2 x 2 = 16 points of 8-GPU plans (milliseconds
// each). It holds every kind of row: tensor 8 x pipeline 2 needs 16 GPUs (invalid); tensor 1 x
// pipeline 1 keeps all 7.5e9 parameters at 16 bytes each (bf16 weights and gradients, fp32
// master weights and two Adam moments: 2 + 2 + 4 + 4 + 4) = 120 GB on one 40 GB GPU (oom);
// tensor 4 x pipeline 2 holds 120 / 8 = 15 GB of state per GPU (ok).
constexpr const char* kSweepText =
    "name: small-sweep\n"
    "model:\n"
    "  preset: gpt-7.5b\n"
    "cluster:\n"
    "  gpu: a100-sxm-40gb\n"
    "  nodes: 1\n"
    "  gpus_per_node: 8\n"
    "training:\n"
    "  global_batch: 16\n"
    "parallel:\n"
    "  tensor: 4\n"
    "  pipeline: 2\n"
    "  recompute: full\n"
    "sweep:\n"
    "  parallel.tensor: [1, 2, 4, 8]\n"
    "  parallel.pipeline: [1, 2]\n"
    "  training.micro_batch: [1, 4]\n";
constexpr std::size_t kPoints = 4 * 2 * 2;

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = cuboid::scratch::file("cuboid-sweep-test-" + name);
    std::ofstream(path) << text;
    return path.string();
}

const std::string& sweep_file() {
    static const std::string path = write_temp("small.yaml", kSweepText);
    return path;
}

json sweep_rows(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"sweep", sweep_file(), "--json", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto o = run_cli(args);
    INFO(o.err);
    REQUIRE(o.code == 0);
    return json::parse(o.out);
}

int group_of(const std::string& status) {
    if (status == "ok") return 0;
    if (status == "oom") return 1;
    return status.rfind("invalid: ", 0) == 0 ? 2 : 3;
}

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    return cells;
}

}  // namespace

TEST_CASE("sweep --json: one row per point, ok by time, then oom, then invalid", "[cli][sweep]") {
    const json rows = sweep_rows({"--threads", "2"});
    REQUIRE(rows.is_array());
    CHECK(rows.size() == kPoints);
    int previous_group = 0;
    double previous_time = 0.0;
    std::map<int, int> per_group;
    std::set<std::tuple<int, int, int>> seen;
    for (const auto& row : rows) {
        const std::string status = row.at("status");
        const int group = group_of(status);
        INFO(row.dump());
        CHECK(group >= previous_group);
        if (group == previous_group && group < 2) CHECK(row.at("iteration_time_s").get<double>() >= previous_time);
        if (group != previous_group) previous_time = 0.0;
        if (group < 2) previous_time = row.at("iteration_time_s");
        previous_group = group;
        ++per_group[group];
        seen.insert({row.at("parallel.tensor").get<int>(), row.at("parallel.pipeline").get<int>(),
                     row.at("training.micro_batch").get<int>()});
        CHECK(row.at("pareto").is_boolean());
        if (group < 2) {
            for (const char* field : {"scenario", "gpus", "iteration_time_s", "tokens_per_s", "model_flops_per_iteration",
                                      "hardware_flops_per_iteration", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
                                      "mfu", "peak_memory_bytes", "memory_capacity_bytes", "fits_in_memory",
                                      "breakdown_s", "sim"})
                CHECK(row.contains(field));
            CHECK(row.at("fits_in_memory").get<bool>() == (group == 0));
            // The point's values are what ran.
            CHECK(row.at("plan").at("tensor") == row.at("parallel.tensor"));
            CHECK(row.at("plan").at("micro_batch") == row.at("training.micro_batch"));
        } else {
            CHECK_FALSE(row.at("pareto").get<bool>());
        }
    }
    CHECK(seen.size() == kPoints);  // every combination once
    CHECK(per_group[0] > 0);
    CHECK(per_group[1] > 0);  // tensor 1 x pipeline 1 (see kSweepText)
    CHECK(per_group[2] > 0);  // tensor 8 x pipeline 2
    CHECK(per_group[3] == 0);
}

TEST_CASE("sweep rows do not depend on the thread count", "[cli][sweep]") {
    json one = sweep_rows({"--threads", "1"});
    json two = sweep_rows({"--threads", "2"});
    for (json* rows : {&one, &two})
        for (auto& row : *rows)
            if (row.contains("sim")) row["sim"].erase("wall_s");  // the only field that may differ
    CHECK(one == two);
}

TEST_CASE("sweep rows are the same folded (the default) and with --no-fold", "[cli][sweep]") {
    json folded = sweep_rows({"--threads", "2"});
    json every_rank = sweep_rows({"--threads", "2", "--no-fold"});
    REQUIRE(folded.size() == kPoints);
    std::size_t fewer_events = 0;
    for (std::size_t i = 0; i < folded.size(); ++i) {
        // sim: the events taken (what folding saves) and the measured wall time; nothing else may differ.
        if (folded[i].contains("sim") &&
            folded[i]["sim"]["events"].get<std::uint64_t>() < every_rank[i]["sim"]["events"].get<std::uint64_t>())
            ++fewer_events;
        folded[i].erase("sim");
        every_rank[i].erase("sim");
    }
    CHECK(folded == every_rank);
    CHECK(fewer_events > 0);  // folding did happen, so the comparison means something
}

TEST_CASE("sweep --csv: a header of the swept keys, status and the run fields, one line per point",
          "[cli][sweep]") {
    const auto o = run_cli({"sweep", sweep_file(), "--csv", "-", "--threads", "2"});
    REQUIRE(o.code == 0);
    std::stringstream text(o.out);
    std::string header_line;
    std::getline(text, header_line);
    const auto header = split(header_line);
    REQUIRE(header.size() >= 5);
    CHECK(std::vector<std::string>(header.begin(), header.begin() + 4) ==
          std::vector<std::string>{"parallel.tensor", "parallel.pipeline", "training.micro_batch", "status"});
    for (const char* column : {"iteration_time_s", "tokens_per_s", "mfu", "peak_memory_bytes", "fits_in_memory",
                               "breakdown_s.bubble", "sim.events", "sim.fold_factor", "pareto"})
        CHECK(std::find(header.begin(), header.end(), column) != header.end());
    std::size_t lines = 0;
    for (std::string line; std::getline(text, line);) ++lines;
    CHECK(lines == kPoints);
}

TEST_CASE("sweep prints a ranked table by default, and --top keeps the fastest ok rows", "[cli][sweep]") {
    const auto all = run_cli({"sweep", sweep_file(), "--threads", "2"});
    REQUIRE(all.code == 0);
    CHECK(contains(all.out, "rank"));
    CHECK(contains(all.out, "16 points:"));
    CHECK(contains(all.out, "invalid: "));
    CHECK(all.err.empty());  // no progress line where standard error is not a terminal
    const auto top = run_cli({"sweep", sweep_file(), "--threads", "2", "--top", "1"});
    REQUIRE(top.code == 0);
    CHECK(contains(top.out, "(showing the 1 fastest ok)"));
    CHECK_FALSE(contains(top.out, "invalid: "));  // counted in the summary only
}

TEST_CASE("sweep input errors exit 2 before any point runs", "[cli][sweep]") {
    const auto swept = run_cli({"sweep", sweep_file(), "--set", "parallel.tensor=2"});
    CHECK(swept.code == 2);
    CHECK(contains(swept.err, "--set: 'parallel.tensor': is swept"));
    CHECK(swept.out.empty());

    const std::string plain = std::string(CUBOID_SOURCE_DIR) + "/scenarios/default.yaml";
    const auto no_axes = run_cli({"sweep", plain});
    CHECK(no_axes.code == 2);
    CHECK(contains(no_axes.err, "no sweep: section; use cuboid run"));

    CHECK(run_cli({"sweep", sweep_file(), "--threads", "0"}).code == 2);
    CHECK(run_cli({"sweep", sweep_file(), "--csv", "-", "--json", "-"}).code == 2);
    CHECK(run_cli({"sweep", sweep_file(), "--trace", "t.json"}).code == 2);
    CHECK(run_cli({"run", plain, "--threads", "2"}).code == 2);
}

TEST_CASE("a sweep whose every point is invalid writes its rows and exits 2", "[cli][sweep]") {
    // One node of 8 GPUs: tensor 8 x pipeline 2 or 4 needs 16 or 32 GPUs.
    std::string text = kSweepText;
    text = text.substr(0, text.find("sweep:")) + "sweep:\n  parallel.pipeline: [2, 4]\n  parallel.tensor: [8]\n";
    const std::string file = write_temp("invalid.yaml", text);
    const auto o = run_cli({"sweep", file, "--json", "-"});
    CHECK(o.code == 2);
    CHECK(contains(o.err, "no point of the sweep is a valid plan"));
    const json rows = json::parse(o.out);
    REQUIRE(rows.size() == 2u);
    for (const auto& row : rows) CHECK(group_of(row.at("status")) == 2);
}

TEST_CASE("a sweep whose points run but none fits writes its rows and exits 3", "[cli][sweep]") {
    // Tensor 1 x pipeline 1 holds the 120 GB of training state on one 40 GB GPU (see kSweepText).
    std::string text = kSweepText;
    text = text.substr(0, text.find("sweep:")) + "sweep:\n  parallel.tensor: [1]\n  parallel.pipeline: [1]\n";
    const std::string file = write_temp("oom.yaml", text);
    const auto o = run_cli({"sweep", file, "--json", "-", "--set", "training.global_batch=8"});
    CHECK(o.code == 3);
    CHECK(contains(o.err, "no point of the sweep fits in GPU memory"));
    const json rows = json::parse(o.out);
    REQUIRE(rows.size() == 1u);
    CHECK(rows[0].at("status") == "oom");
    CHECK_FALSE(rows[0].at("pareto").get<bool>());
}

TEST_CASE("sweep --memory-headroom: a point fits only below (1 - headroom) of the GPU's memory", "[cli][sweep]") {
    const json plain = sweep_rows({"--threads", "2"});
    // 0 is today's behaviour: the same rows, without a headroom field.
    const json zero = sweep_rows({"--threads", "2", "--memory-headroom", "0"});
    REQUIRE(zero.size() == plain.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
        json a = plain[i], b = zero[i];
        for (json* row : {&a, &b})
            if (row->contains("sim")) (*row)["sim"].erase("wall_s");  // the only figure that is timed
        CHECK(a == b);
    }
    // The largest peak that fits today, made just too large by the headroom.
    double largest = 0.0, capacity = 0.0;
    for (const auto& row : plain)
        if (row.at("status") == "ok") {
            largest = std::max(largest, row.at("peak_memory_bytes").get<double>());
            capacity = row.at("memory_capacity_bytes").get<double>();
        }
    REQUIRE(largest > 0.0);
    const double headroom = 1.0 - 0.999 * largest / capacity;
    const json tight = sweep_rows({"--threads", "2", "--memory-headroom", std::to_string(headroom)});
    std::size_t ok_plain = 0, ok_tight = 0;
    for (const auto& row : plain) ok_plain += row.at("status") == "ok";
    for (const auto& row : tight) {
        if (row.at("status") != "ok") continue;
        ++ok_tight;
        CHECK(row.at("peak_memory_bytes").get<double>() <= (1.0 - headroom) * capacity);
        CHECK(row.at("memory").at("headroom").get<double>() == Approx(headroom));
    }
    CHECK(ok_tight < ok_plain);
}
