// Inputs that would make cuboid read, allocate or simulate without bound are refused before any
// work, with exit 2 and a message naming the limit: non-regular and oversized input files, plans
// whose estimated events or memory exceed --max-events or --max-memory, clusters and degrees whose
// products overflow, and sweeps with more points than may be listed. Each case finishing at all is
// part of the test: the target runs under a CTest timeout.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "strategies/cli/sweep_points.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {

const std::string kDefault = std::string(CUBOID_SOURCE_DIR) + "/scenarios/default.yaml";

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = cuboid::scratch::file("cuboid-bounds-test-" + name);
    std::ofstream(path) << text;
    return path.string();
}

// `cuboid run default.yaml --set KEY=VALUE...`, which must be refused quickly.
Outcome refused_run(const std::vector<std::string>& sets, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"run", kDefault, "--json", "-"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    args.insert(args.end(), extra.begin(), extra.end());
    const auto start = std::chrono::steady_clock::now();
    Outcome o = run_cli(args);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    INFO(o.err);
    CHECK(o.code == 2);
    CHECK(o.out.empty());
    CHECK(took.count() < 10.0);  // refused from the plan's shape, not after building it
    CHECK_FALSE(contains(o.err, "internal error"));
    return o;
}

}  // namespace

TEST_CASE("input files must be regular files of bounded size", "[cli][bounds]") {
    const auto device = run_cli({"run", "/dev/zero"});  // used to read forever
    CHECK(device.code == 2);
    CHECK(contains(device.err, "/dev/zero: is not a regular file"));

    const auto folder = run_cli({"run", std::filesystem::temp_directory_path().string()});
    CHECK(folder.code == 2);
    CHECK(contains(folder.err, "is a folder, not a scenario file"));

    // A sparse file just over the cap: refused from its size, without reading it.
    const auto big = cuboid::scratch::file("cuboid-bounds-test-big.yaml");
    std::ofstream(big) << "name: big\n";
    std::filesystem::resize_file(big, (std::uintmax_t{16} << 20) + 1);
    const auto large = run_cli({"run", big.string()});
    CHECK(large.code == 2);
    CHECK(contains(large.err, "a scenario file may have at most 16777216 bytes"));
    std::filesystem::remove(big);

    CHECK(run_cli({"whatif", "/dev/zero"}).code == 2);
    CHECK(run_cli({"search", "/dev/zero"}).code == 2);
}

TEST_CASE("a plan too large to simulate is refused with the estimate and the limit", "[cli][bounds]") {
    const auto layers = refused_run({"model.layers=2147483647"});
    CHECK(contains(layers.err, "'model.layers': the plan would take about"));
    CHECK(contains(layers.err, "more than --max-events"));

    // 4,000,000 micro-batches per iteration: used to abort (std::bad_alloc in a builder thread).
    const auto batch = refused_run({"training.global_batch=4000000", "training.micro_batch=1", "parallel.data=32"});
    CHECK(contains(batch.err, "'training.global_batch': the plan would take about"));

    // The limits are options: the default scenario runs under the defaults and is refused
    // under small ones.
    CHECK(contains(refused_run({}, {"--max-events", "1000"}).err, "more than --max-events 1000"));
    CHECK(contains(refused_run({}, {"--max-memory", "0.0001"}).err, "more than --max-memory"));
    CHECK(run_cli({"run", kDefault, "--max-events", "-1"}).code == 2);
    CHECK(run_cli({"run", kDefault, "--max-memory", "0"}).code == 2);
}

TEST_CASE("cluster sizes and degrees that overflow 32 bits are input errors", "[cli][bounds]") {
    const auto nics = refused_run({"cluster.inter_node.nics_per_node=2147483647"});
    CHECK(contains(nics.err, "'cluster.inter_node.nics_per_node'"));
    CHECK(contains(nics.err, "cuboid models at most 4194304 NICs"));

    // 65,536 x 65,536 wrapped to 0: "the cluster has no GPUs".
    const auto gpus_derived = refused_run({"cluster.nodes=65536", "cluster.gpus_per_node=65536"});
    CHECK(contains(gpus_derived.err, "nodes 65536 x gpus_per_node 65536 = 4294967296 GPUs; cuboid models at most"));
    CHECK_FALSE(contains(gpus_derived.err, "no GPUs"));

    // tensor*pipeline*data wrapped to 0 used to be reported as such.
    const auto degrees = refused_run({"parallel.tensor=65536", "parallel.pipeline=65536", "parallel.data=2"});
    CHECK(contains(degrees.err, "tensor*pipeline*data = 8589934592 but the cluster has 512 GPUs"));
}

TEST_CASE("hardware figures that would overflow the simulator's clock are input errors", "[cli][bounds]") {
    // A kernel launch of 1e300 us used to reach the event queue as a negative time ("event
    // scheduled in the past", an internal error).
    const std::string profile = write_temp("slow-launch.yaml",
                                           "format: cuboid-hardware-profile/1\n"
                                           "metadata: {gpu: a100-sxm-80gb}\n"
                                           "kernel_launch_us: 1e300\n");
    const auto o = refused_run({"cluster.profile=" + profile});
    CHECK((contains(o.err, "kernel_launch_us") || contains(o.err, "cuboid simulates")));
}

TEST_CASE("a sweep refuses too large a point on its own, and too many points as a whole", "[cli][bounds]") {
    const std::string base = "name: bounds\nmodel:\n  preset: gpt-1.7b\ncluster:\n  nodes: 1\n  gpus_per_node: 8\n"
                             "training:\n  global_batch: 16\n  micro_batch: 1\nparallel:\n  tensor: 8\n";
    const std::string huge = write_temp("huge.yaml", base + "sweep:\n  cluster.nodes: [1, 2147483647]\n");
    const auto o = run_cli({"sweep", huge, "--json", "-", "--threads", "1"});
    INFO(o.err);
    CHECK(o.code == 0);  // the one-node point runs
    const auto rows = nlohmann::json::parse(o.out);
    REQUIRE(rows.size() == 2u);
    CHECK(contains(rows.dump(), "2147483647 x gpus_per_node 8 = 17179869176 GPUs; cuboid models at most"));

    std::string axes = "sweep:\n";
    for (const char* key : {"training.global_batch", "model.layers", "model.seq_len"}) {
        axes += std::string("  ") + key + ": [";
        for (int v = 1; v <= 101; ++v) axes.append(v > 1 ? ", " : "").append(std::to_string(v * 8));
        axes += "]\n";
    }
    const auto many = run_cli({"sweep", write_temp("many.yaml", base + axes)});
    CHECK(many.code == 2);
    CHECK(contains(many.err, "1030301 points (training.global_batch 101 x model.layers 101 x model.seq_len 101)"));
}

TEST_CASE("the sweep point count saturates instead of wrapping", "[cli][bounds]") {
    SweepAxes axes;
    for (int a = 0; a < 64; ++a) axes.emplace_back(std::to_string(a), std::vector<std::string>{"1", "2"});
    CHECK(sweep_point_count(axes) == std::numeric_limits<std::size_t>::max());  // 2^64 wrapped to 0
    axes.resize(10);
    CHECK(sweep_point_count(axes) == 1024u);
}
