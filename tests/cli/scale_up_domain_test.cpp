// cluster.scale_up_domain through the built `cuboid`: impossible domains exit 2 naming the file,
// the line and the key with what is allowed; a GB200 NVL72 cluster runs with the rack's layout
// and shows its domain in the report, the JSON and `cuboid list gpus`.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli/binary_run.hpp"
#include "tests/scratch_dir.hpp"

using cuboid::cli::test::Outcome;
using cuboid::cli::test::run_cuboid;

namespace {

// A small model on GB200 with `cluster_lines` under `cluster:` (from line 6) and `tensor`.
std::string scenario(const std::string& cluster_lines, int tensor = 4) {
    const auto path = cuboid::scratch::file("cuboid_scale_up_domain_test.yaml");
    std::ofstream(path) << "name: nvl\n"
                           "model:\n"
                           "  preset: gpt-1.7b\n"
                           "cluster:\n"
                           "  gpu: gb200\n"
                        << cluster_lines
                        << "training:\n"
                           "  global_batch: 72\n"
                           "parallel:\n"
                           "  tensor: "
                        << tensor << "\n";
    return path.string();
}

void refused(const std::string& cluster_lines, int line, const std::string& key, const std::string& why,
             int tensor = 4) {
    const std::string path = scenario(cluster_lines, tensor);
    const Outcome o = run_cuboid("run '" + path + "' --json -");
    INFO(o.err);
    CHECK(o.code == 2);
    CHECK(o.out.empty());
    CHECK_THAT(o.err, Catch::Contains(path + ":" + std::to_string(line)));
    CHECK_THAT(o.err, Catch::Contains("'" + key + "'"));
    CHECK_THAT(o.err, Catch::Contains(why));
}

}  // namespace

TEST_CASE("cuboid run: an impossible NVLink domain exits 2 at its key", "[cli][binary][scale_up_domain]") {
    const std::string nodes = "  nodes: 18\n";  // line 6: 72 GPUs in trays of 4
    refused(nodes + "  scale_up_domain: 48\n", 7, "cluster.scale_up_domain",
            "48 does not divide the cluster's 72 GPUs (nodes 18 x gpus_per_node 4); allowed: a multiple of "
            "gpus_per_node 4");
    refused(nodes + "  scale_up_domain: 2\n", 7, "cluster.scale_up_domain", "smaller than a node of 4 GPUs");
    refused(nodes + "  scale_up_domain: 70\n", 7, "cluster.scale_up_domain", "not a whole number of nodes of 4 GPUs");
    refused(nodes + "  scale_up_domain: 0\n", 7, "cluster.scale_up_domain", "must be >= 1");
    refused(nodes + "  scale_up_domain: rack\n", 7, "cluster.scale_up_domain", "rack");
    refused(nodes + "  scale_up_domain: 72\n  intra_node: pcie\n", 7, "cluster.scale_up_domain",
            "needs NVLink switches (cluster.intra_node: nvswitch)");
    // A tensor group may not straddle two domains: 8 divides neither 4-GPU trays' multiple 12.
    refused(nodes + "  scale_up_domain: 12\n", 11, "parallel.tensor",
            "tensor 8 must divide cluster.scale_up_domain 12", 8);
    // Without the key GB200's NVL72 rack gives 72, which 64 trays (256 GPUs) do not fill: the
    // message stands at cluster.gpu (line 5) and says where the 72 came from.
    refused("  nodes: 64\n", 5, "cluster.scale_up_domain", "72 is the NVLink domain of GB200 NVL72");
}

TEST_CASE("cuboid run: a GB200 NVL72 rack runs with the rack's layout and shows its domain",
          "[cli][binary][scale_up_domain]") {
    const Outcome o = run_cuboid("run '" + scenario("  nodes: 18\n") + "' --json -");
    INFO(o.err);
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    const auto& c = j.at("cluster");
    CHECK(c.at("gpu") == "gb200-nvl72-186gb");
    CHECK(c.at("gpus_per_node") == 4);
    CHECK(c.at("scale_up_domain") == 72);
    CHECK(c.at("nics_per_node") == 4);
    CHECK(c.at("nic_gbps") == 400.0);
    CHECK(j.at("gpus") == 72);

    const Outcome text = run_cuboid("run '" + scenario("  nodes: 36\n") + "'");
    REQUIRE(text.code == 0);
    CHECK_THAT(text.out, Catch::Contains("36 nodes x 4 gb200-nvl72-186gb = 144 GPUs; nvswitch in a node "
                                         "(NVLink domains of 72 GPUs, 18 nodes each)"));
    // The same racks with NVLink only inside a tray: tensor 4 stays in the tray, the data-parallel
    // all-reduce now crosses the NICs, so the iteration is slower.
    const Outcome trays = run_cuboid("run '" + scenario("  nodes: 18\n  scale_up_domain: 4\n") + "' --json -");
    REQUIRE(trays.code == 0);
    CHECK(nlohmann::json::parse(trays.out).at("iteration_time_s").get<double>() >
          j.at("iteration_time_s").get<double>());
}

TEST_CASE("cuboid run: a domain of one node gives the fingerprint of the scenario without the key",
          "[cli][binary][scale_up_domain]") {
    const std::string run = "run '" + std::string(CUBOID_SOURCE_DIR) + "/scenarios/default.yaml' --json -";
    const Outcome plain = run_cuboid(run);
    const Outcome node = run_cuboid(run + " --set cluster.scale_up_domain=8");  // default.yaml: 8 GPUs per node
    REQUIRE(plain.code == 0);
    REQUIRE(node.code == 0);
    const auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(node.out);
    CHECK(a.at("fingerprint") == b.at("fingerprint"));
    CHECK(a.at("iteration_time_s") == b.at("iteration_time_s"));
    CHECK(a.at("cluster").at("scale_up_domain") == 8);
    // Two nodes per domain is another cluster: the data-parallel traffic of node pairs moves to NVLink.
    const Outcome pairs = run_cuboid(run + " --set cluster.scale_up_domain=16");
    REQUIRE(pairs.code == 0);
    CHECK(nlohmann::json::parse(pairs.out).at("fingerprint") != a.at("fingerprint"));
}

TEST_CASE("cuboid list gpus names the NVL72 systems", "[cli][binary][scale_up_domain]") {
    const Outcome o = run_cuboid("list gpus");
    REQUIRE(o.code == 0);
    CHECK_THAT(o.out, Catch::Contains("as GB200 NVL72: 4 GPUs per node, NVLink domain of 72 GPUs, 4 x 400 Gbit/s NICs"));
    CHECK_THAT(o.out, Catch::Contains("as GB300 NVL72: 4 GPUs per node, NVLink domain of 72 GPUs, 4 x 800 Gbit/s NICs"));
    for (const char* name : {"b300-sxm-270gb", "h20-96gb", "mi325x-256gb", "mi355x-288gb"}) {
        INFO(name);
        CHECK_THAT(o.out, Catch::Contains(name));
    }
}
