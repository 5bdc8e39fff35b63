#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/catalog_data.hpp"
#include "hardware_models/errors.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

// The error of a catalog whose gpus.yaml is `gpus` (no nodes, networks or NCCL data), read from
// "dir/"; the test fails when it parses.
InputError gpus_error(const std::string& gpus) {
    try {
        (void)Catalog::parse(gpus, "nodes: []", "networks: []", "nccl: {}", "dir/");
    } catch (const InputError& e) {
        return e;
    }
    FAIL("expected InputError");
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("catalog: the builtin catalog has every GPU name scripts rely on", "[catalog]") {
    const Catalog c = Catalog::load_builtin();
    // docs/scenario.md, "Names that scripts rely on".
    for (const char* name : {"v100-sxm2-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb",
                             "h200-sxm-141gb", "b200-sxm-180gb", "mi300x-192gb"}) {
        INFO(name);
        CHECK(c.gpu(name).name == name);
    }
    CHECK(c.gpu("h100").name == "h100-sxm-80gb");  // alias
    CHECK(c.node_kind_names() == std::vector<std::string>{"nvswitch", "nvlink-mesh", "pcie"});
    CHECK(c.network_kind_names() == std::vector<std::string>{"infiniband", "roce", "ethernet"});
}

TEST_CASE("catalog: an unknown GPU is an input error that lists the allowed names", "[catalog]") {
    const Catalog c = Catalog::load_builtin();
    try {
        (void)c.gpu("a100-sxm-96gb");
        FAIL("expected InputError");
    } catch (const InputError& e) {
        const std::string msg = e.what();
        CHECK(msg.find("a100-sxm-96gb") != std::string::npos);
        CHECK(msg.find("allowed") != std::string::npos);
        CHECK(msg.find("a100-sxm-80gb") != std::string::npos);
        CHECK(msg.find("mi300x-192gb") != std::string::npos);
        CHECK(e.where().key == "cluster.gpu");
    }
}

TEST_CASE("catalog: peaks and memory match hardware_models/catalog/sources/gpus.csv", "[catalog]") {
    const Catalog c = Catalog::load_builtin();
    // gpus.csv A100_SXM4_80GB: bf16 312 TFLOP/s, tf32 156, hbm 2.039 TB/s, 108 SMs, 400 W.
    const GpuSpec& a = c.gpu("a100-sxm-80gb");
    CHECK(a.peak(sim::Precision::Bf16).value == Approx(312e12));
    CHECK(a.peak(sim::Precision::Tf32).value == Approx(156e12));
    CHECK(a.peak(sim::Precision::Fp8).value == 0.0);  // no FP8 tensor cores
    CHECK(a.memory_bandwidth.value == Approx(2.039e12));
    CHECK(a.sm_count == 108);
    CHECK(a.tdp_watts == Approx(400));
    CHECK(a.scaleup_bandwidth.value == Approx(300e9));  // NVLink3, per direction
    // gpus.csv H100_SXM5_80GB: fp8 1978.9, bf16 989.4, 3.35 TB/s, 132 SMs, scale-up 450 GB/s.
    const GpuSpec& h = c.gpu("h100-sxm-80gb");
    CHECK(h.peak(sim::Precision::Fp8).value == Approx(1978.9e12));
    CHECK(h.peak(sim::Precision::Bf16).value == Approx(989.4e12));
    CHECK(h.memory_bandwidth.value == Approx(3.35e12));
    CHECK(h.sm_count == 132);
    // gpus.csv MI300X_OAM_192GB: bf16 1307.4, 192 GB (read as GiB), 304 CUs.
    const GpuSpec& m = c.gpu("mi300x-192gb");
    CHECK(m.peak(sim::Precision::Bf16).value == Approx(1307.4e12));
    CHECK(m.memory_capacity.value == Approx(192.0 * 1073741824.0));
    CHECK(m.sm_count == 304);
}

TEST_CASE("catalog: the GEMM plateau of every GPU is a measured fraction of peak", "[catalog]") {
    // hardware.md §8: large BF16 GEMMs reach 0.73-0.87 of peak (Ampere/Hopper/Blackwell), ~0.5 on
    // MI300X; no curve may claim more than the best measurement (A100 MAMF 0.869).
    const Catalog c = Catalog::load_builtin();
    for (const auto& g : c.gpus()) {
        INFO(g.name);
        double best = 0.0;
        for (const auto& p : g.gemm_efficiency.points) best = std::max(best, p.efficiency);
        CHECK(best >= 0.5);
        CHECK(best <= 0.869);
        CHECK(g.kernel_launch > kTimeZero);
    }
}

TEST_CASE("catalog: loading the catalog directory gives the builtin catalog", "[catalog]") {
    const Catalog builtin = Catalog::load_builtin();
    const Catalog files = Catalog::load("hardware_models/catalog");
    CHECK(files.gpu_names() == builtin.gpu_names());
    CHECK(files.gpu("b200-sxm-180gb").peak_fp8.value == builtin.gpu("b200-sxm-180gb").peak_fp8.value);
    CHECK(files.nccl().ring_base == builtin.nccl().ring_base);
}

TEST_CASE("catalog: a value of the wrong type names file, line and key", "[catalog]") {
    const std::string gpus =
        "gpus:\n"
        "  - name: x\n"
        "    description: test\n"
        "    architecture: test\n"
        "    peak_tflops: {fp32: 1, tf32: 1, fp16: 1, bf16: 1, fp8: 0}\n"
        "    memory_gib: lots\n";
    const InputError e = gpus_error(gpus);
    CHECK(e.where().file == "dir/gpus.yaml");
    CHECK(e.where().line == 6);  // the line of "memory_gib: lots"
    CHECK(e.where().key == "gpus[0].memory_gib");
    CHECK(std::string(e.what()).find("expected a number") != std::string::npos);
}

TEST_CASE("catalog: a host copy rate out of range names file, line and key", "[catalog]") {
    // host_copy_gb_per_s is optional; when given, each rate is a positive measured figure.
    const std::string gpus =
        "gpus:\n"
        "  - name: x\n"
        "    description: test\n"
        "    architecture: test\n"
        "    peak_tflops: {fp32: 1, tf32: 1, fp16: 1, bf16: 1, fp8: 0}\n"
        "    memory_gib: 80\n"
        "    memory_bandwidth_tb_per_s: 3\n"
        "    sm_count: 100\n"
        "    tdp_w: 700\n"
        "    scaleup_gb_per_s: 450\n"
        "    host_link_gb_per_s: 63\n"
        "    host_copy_gb_per_s: {device_to_host: 0, host_to_device: 201}\n";
    const InputError e = gpus_error(gpus);
    CHECK(e.where().file == "dir/gpus.yaml");
    CHECK(e.where().line == 12);  // the line of "host_copy_gb_per_s"
    CHECK(e.where().key == "gpus[0].host_copy_gb_per_s.device_to_host");
}

TEST_CASE("catalog: NCCL's tree correction is looked up by power-of-two size class", "[catalog]") {
    const Catalog catalog = Catalog::load_builtin();
    const NcclConstants& nccl = catalog.nccl();
    REQUIRE(nccl.tree_allreduce_correction.size() == 24);  // 64 B .. 1 GiB, NCCL's Simple row
    CHECK(nccl.tree_allreduce_factor(Bytes(32)) == 1.0);   // below 64 B: no class
    CHECK(nccl.tree_allreduce_factor(Bytes(64)) == 0.9);   // class 0
    CHECK(nccl.tree_allreduce_factor(Bytes(1 << 20)) == 0.5);           // 2^14 x 64 B
    CHECK(nccl.tree_allreduce_factor(Bytes((1 << 21) - 1)) == 0.5);     // still class 14
    CHECK(nccl.tree_allreduce_factor(Bytes(1 << 24)) == 0.7);           // 16 MiB: class 18
    CHECK(nccl.tree_allreduce_factor(Bytes(std::ldexp(1.0, 30) - 1)) == 0.9);  // class 23
    CHECK(nccl.tree_allreduce_factor(Bytes(std::ldexp(1.0, 30))) == 1.0);      // past the table
}

TEST_CASE("catalog: a tree correction outside (0, 1] names file, line and key", "[catalog]") {
    const BuiltinCatalogText text = builtin_catalog_text();
    const auto parse_nccl = [&](const std::string& table) {
        const std::string nccl =
            "nccl:\n"
            "  ring_base_us: 8.4\n"
            "  tree_base_us: 8.4\n"
            "  net_ring_step_us: 14\n"
            "  net_tree_step_us: 14\n"
            "  net_overhead_us: 3\n"
            "  tree_allreduce_correction: " + table + "\n";
        return Catalog::parse(std::string(text.gpus), std::string(text.nodes), std::string(text.networks), nccl,
                              "dir/");
    };
    CHECK(parse_nccl("[0.9, 0.5]").nccl().tree_allreduce_factor(Bytes(128)) == 0.5);
    try {
        (void)parse_nccl("[0.9, 1.5]");
        FAIL("expected InputError");
    } catch (const InputError& e) {
        CHECK(e.where().file == "dir/nccl.yaml");
        CHECK(e.where().line == 7);
        CHECK(e.where().key == "nccl.tree_allreduce_correction[1]");
        CHECK(std::string(e.what()).find("(0, 1]") != std::string::npos);
    }
    CHECK_THROWS_AS(parse_nccl("[]"), InputError);
}

TEST_CASE("catalog: list rows describe every entry with figures and a source", "[catalog]") {
    const Catalog c = Catalog::load_builtin();
    const auto gpus = c.describe(CatalogSection::Gpus);
    REQUIRE(gpus.size() == c.gpus().size());
    for (const auto& row : gpus) {
        CHECK(!row.description.empty());
        CHECK(row.figures.find("TFLOP/s") != std::string::npos);
        CHECK(row.source.find("hw §") != std::string::npos);
    }
    CHECK(c.describe(CatalogSection::Nodes).size() == 3);
    const auto nets = c.describe(CatalogSection::Networks);
    REQUIRE(nets.size() == 3);
    CHECK(nets[0].figures.find("ndr 400 Gb/s") != std::string::npos);
}

TEST_CASE("catalog: a NIC rate picks the network generation and its switch radix", "[catalog]") {
    const Catalog catalog = Catalog::load_builtin();
    const NetworkKindSpec& ib = catalog.network_kind(InterNodeKind::InfiniBand);
    CHECK(ib.generation_for(200).name == "hdr");
    CHECK(ib.generation_for(400).name == "ndr");
    CHECK(ib.generation_for(300).name == "ndr");    // the slowest at least as fast
    CHECK(ib.generation_for(1600).name == "xdr");   // the fastest when none is
    CHECK(ib.generation_for(400).switch_radix == 64);
}

TEST_CASE("catalog: enum names round-trip and unknown names list the allowed ones", "[catalog]") {
    CHECK(parse_intra_node_kind("nvlink-mesh", {}) == IntraNodeKind::NvLinkMesh);
    CHECK(parse_inter_node_kind("roce", {}) == InterNodeKind::Roce);
    CHECK(parse_network_topology("rail-optimized", {}) == NetworkTopology::RailOptimized);
    CHECK(parse_catalog_section("networks", {}) == CatalogSection::Networks);
    try {
        (void)parse_network_topology("torus", {"s.yaml", 7, "cluster.inter_node.topology"});
        FAIL("expected InputError");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) ==
              "s.yaml:7: 'cluster.inter_node.topology': unknown value 'torus' "
              "(allowed: fat-tree, rail-optimized, single-switch)");
    }
}
