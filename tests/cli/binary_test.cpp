// The built `cuboid` executable as a script would use it: every field of the output contract
// with its type, exit code 2 for a bad file, and identical results from two runs.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/binary_run.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using cuboid::cli::test::contains;
using cuboid::cli::test::Outcome;
using cuboid::cli::test::run_cuboid;
using nlohmann::json;

namespace {

const std::string kDefault = std::string(CUBOID_SOURCE_DIR) + "/scenarios/default.yaml";

}  // namespace

TEST_CASE("cuboid run --json - prints every contract field with its type", "[cli][binary]") {
    const Outcome o = run_cuboid("run '" + kDefault + "' --json -");
    INFO(o.err);
    REQUIRE(o.code == 0);
    const json j = json::parse(o.out);  // stdout holds nothing but the JSON document
    CHECK(j.at("scenario").is_string());
    CHECK(j.at("gpus").is_number_integer());
    for (const char* key : {"iteration_time_s", "tokens_per_s", "model_flops_per_iteration",
                            "hardware_flops_per_iteration", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu"}) {
        INFO(key);
        CHECK(j.at(key).is_number());
    }
    CHECK(j.at("peak_memory_bytes").is_number_integer());
    CHECK(j.at("memory_capacity_bytes").is_number_integer());
    CHECK(j.at("fits_in_memory").is_boolean());
    const json& b = j.at("breakdown_s");
    double sum = 0.0;
    for (const char* key : {"compute", "recompute", "tp_comm_exposed", "cp_comm_exposed", "ep_comm_exposed",
                            "pp_comm_exposed", "dp_comm_exposed", "bubble"}) {
        INFO(key);
        REQUIRE(b.at(key).is_number());
        sum += b.at(key).get<double>();
    }
    // The contract: the parts add up to the iteration time within 1 %.
    CHECK(sum == Approx(j.at("iteration_time_s").get<double>()).epsilon(0.01));
    CHECK(j.at("sim").at("events").is_number_integer());
    CHECK(j.at("sim").at("wall_s").is_number());
    // default.yaml: 64 nodes x 8 GPUs per node.
    CHECK(j.at("gpus").get<int>() == 64 * 8);
    CHECK(j.at("plan").at("data").get<int>() == 32);
}

TEST_CASE("cuboid run on a bad file exits 2 with one located message", "[cli][binary]") {
    const auto path = cuboid::scratch::file("cuboid_binary_test_bad.yaml");
    std::ofstream(path) << "model:\n  preset: gpt-39b\nparallel:\n  tensor: eight\n";
    const Outcome o = run_cuboid("run '" + path.string() + "' --json -");
    CHECK(o.code == 2);
    CHECK(o.out.empty());
    // Line 4 of the file above holds the bad tensor degree.
    CHECK(contains(o.err, path.string() + ":4: 'parallel.tensor': expected an integer, got 'eight'"));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    std::filesystem::remove(path);
}

TEST_CASE("two runs give the same JSON except the wall time", "[cli][binary]") {
    const std::string args = "run '" + kDefault +
                             "' --json - --set cluster.nodes=4 --set parallel.data=2 --set training.global_batch=64";
    json first = json::parse(run_cuboid(args).out);
    json second = json::parse(run_cuboid(args).out);
    first["sim"].erase("wall_s");
    second["sim"].erase("wall_s");
    CHECK(first == second);
    CHECK(first.at("fingerprint") == second.at("fingerprint"));
}

TEST_CASE("cuboid sweep --csv - writes only the CSV, and no progress line off a terminal", "[cli][binary]") {
    // 2 x 2 points of GPT 1.7B on one 8-GPU node (standard error goes to a file here, not a terminal).
    const auto file = cuboid::scratch::file("cuboid_binary_test_sweep.yaml");
    std::ofstream(file) << "model: {preset: gpt-1.7b}\n"
                           "cluster: {gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 8}\n"
                           "training: {global_batch: 16}\n"
                           "sweep: {parallel.tensor: [1, 2], parallel.pipeline: [1, 2]}\n";
    const Outcome o = run_cuboid("sweep '" + file.string() + "' --csv - --threads 2");
    INFO(o.err);
    CHECK(o.code == 0);
    CHECK(o.err.empty());
    std::istringstream lines(o.out);
    std::string header;
    std::getline(lines, header);
    CHECK(header.rfind("parallel.tensor,parallel.pipeline,status,", 0) == 0);
    int rows = 0;
    for (std::string line; std::getline(lines, line);) ++rows;
    CHECK(rows == 2 * 2);
    std::filesystem::remove(file);
}
