// Rack-scale NVLink domains (cluster.scale_up_domain): a GB200 NVL72 rack's 18 trays of 4 GPUs
// share one NVLink switch fabric, and only traffic between racks takes the trays' NICs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "hardware_models/collectives.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/topology.hpp"
#include "hw_test_util.hpp"

using namespace cuboid;
using namespace cuboid::hw;
using namespace cuboid::hw::test;
using sim::OpKind;

namespace {

// NCCL Simple constants (nccl.yaml, hardware.md §6.3): ring base 8.4 us, NVLink step 3.4 us,
// network step 14 us; NVLink payload efficiency 0.8 (nodes.yaml), InfiniBand 0.94 (networks.yaml).
constexpr double kBase = 8.4e-6, kNvStep = 3.4e-6, kNetStep = 14e-6, kSwitch = 0.13e-6;
constexpr double kNvLink5 = 900e9 * 0.80;  // GB200 NVLink5 per direction x protocol efficiency
constexpr double kNdr = 50e9 * 0.94;       // ConnectX-7 400 Gb/s x InfiniBand efficiency

// `racks` GB200 NVL72 racks: trays of 4 GPUs, 72 GPUs per NVLink domain, one 400G NIC per GPU.
ClusterSpec nvl72(int racks) {
    ClusterSpec s;
    s.gpu = "gb200";
    s.nodes = 18 * racks;
    s.gpus_per_node = 4;
    s.scale_up_domain = 72;
    s.nics_per_node = 4;
    s.nic_gbps = 400.0;
    return s;
}

bool crosses(const Topology& t, std::span<const sim::LinkId> route, VertexKind kind) {
    return std::any_of(route.begin(), route.end(), [&](sim::LinkId id) { return t.link_target_kind(id) == kind; });
}

}  // namespace

TEST_CASE("scale-up domain: GPUs of different trays of one NVL72 rack talk over its NVLink switches",
          "[topology][scale_up_domain]") {
    const auto hw = Hardware::build(nvl72(2), Catalog::load_builtin());
    const Topology& t = hw->topology();
    CHECK(t.domain_of(0) == 0);
    CHECK(t.domain_of(71) == 0);   // tray 17, the rack's last
    CHECK(t.domain_of(72) == 1);   // the second rack
    CHECK(t.node_of(71) == 17);
    // GPU 0 (tray 0) to GPU 70 (tray 17): up to the rack's switch and down, both at NVLink5 rate.
    const auto r = t.route(0, 70);
    REQUIRE(r.size() == 2);
    CHECK(t.links()[r[0]].name == "n0.gpu0->d0.nvswitch");
    CHECK(t.links()[r[1]].name == "d0.nvswitch->n17.gpu2");
    for (const auto id : r) {
        CHECK(t.link_class(id) == LinkClass::NvLink);
        CHECK(t.links()[id].bandwidth.value == Approx(900e9));
    }
    // Between racks: the tray's NIC, the network, the other tray's NIC; never NVLink.
    const auto across = t.route(0, 72);
    CHECK(crosses(t, across, VertexKind::Nic));
    CHECK(crosses(t, across, VertexKind::Leaf));
    CHECK_FALSE(crosses(t, across, VertexKind::NvSwitch));
    // One logical switch per rack, none per tray.
    int switches = 0;
    for (const auto v : boost::make_iterator_range(boost::vertices(t.graph())))
        switches += t.graph()[v].kind == VertexKind::NvSwitch ? 1 : 0;
    CHECK(switches == 2);
}

TEST_CASE("scale-up domain: an all-reduce over a 72-GPU NVLink domain of 18 trays runs at NVLink bandwidth",
          "[collectives][scale_up_domain]") {
    const auto hw = Hardware::build(nvl72(1), Catalog::load_builtin());
    const Bytes s = gibibytes(0.5);
    const auto ranks = iota_ranks(0, 72);
    // One ring over the rack's switch, every step on NVLink (NCCL sees one NVLink "node"):
    // t = 2(P-1)/P S / B + base + 2(P-1) NVLink steps, with B = 0.8 x 900 GB/s.
    const double p = 72.0;
    const double expected = 2.0 * (p - 1) / p * s.value / kNvLink5 + kBase + 2.0 * (p - 1) * kNvStep;
    CHECK(hw->collectives().eligible(OpKind::AllReduce, ranks).size() == 1);  // the ring: no tree inside one domain
    CHECK(to_seconds(hw->collective_time(OpKind::AllReduce, s, ranks)) == Approx(expected).epsilon(1e-9));
    CHECK(to_seconds(simulate(*hw, collective_program(72, OpKind::AllReduce, s, {ranks}))) ==
          Approx(expected).margin(1e-9));
    // The same 72 GPUs as 18 separate 4-GPU nodes (no domain) all-reduce over the NICs: far slower.
    ClusterSpec trays = nvl72(1);
    trays.scale_up_domain.reset();
    const auto split = Hardware::build(trays, Catalog::load_builtin());
    CHECK(to_seconds(split->collective_time(OpKind::AllReduce, s, ranks)) > 1.5 * expected);
}

TEST_CASE("scale-up domain: traffic between domains goes over the trays' NICs", "[collectives][scale_up_domain]") {
    const auto hw = Hardware::build(nvl72(2), Catalog::load_builtin());
    const Topology& t = hw->topology();
    const Bytes s = gigabytes(0.1);
    // GPU 3 of rack 0 to GPU 3 of rack 1: its ConnectX-7 (0.94 x 50 GB/s) is the bottleneck (the
    // PCIe Gen5 link to it is 0.8 x 63 GB/s), one network step plus the switches crossed.
    const auto route = t.route(3, 72 + 3);
    const double expected = s.value / kNdr + kBase + kNetStep + kSwitch * t.switch_hops(route);
    CHECK(to_seconds(simulate(*hw, collective_program(144, OpKind::Send, s, {{3, 72 + 3}}))) ==
          Approx(expected).margin(1e-9));
    // Inside a rack, across trays, the same transfer is an NVLink one.
    CHECK(to_seconds(simulate(*hw, collective_program(144, OpKind::Send, s, {{3, 68}}))) ==
          Approx(s.value / kNvLink5 + kBase + kNvStep).margin(1e-9));
    // A data-parallel all-reduce of one GPU per rack is planned as two NVLink domains: a ring
    // with network steps whose bandwidth is the NIC's.
    const auto plan = hw->collectives().plan(OpKind::AllReduce, s, std::vector<std::uint32_t>{0, 72}, 0);
    for (const auto& phase : plan.plan.phases)
        for (const auto& flow : phase.flows)
            for (const auto& use : flow.links) CHECK(t.link_class(use.link) != LinkClass::NvLink);
}

TEST_CASE("scale-up domain: a domain of one node is the cluster without the key", "[topology][scale_up_domain]") {
    // Bit for bit: the same links, names and rates, and the same collective times.
    ClusterSpec plain = a100_cluster(4);
    ClusterSpec explicit_node = plain;
    explicit_node.scale_up_domain = plain.gpus_per_node;
    const auto a = Hardware::build(plain, Catalog::load_builtin());
    const auto b = Hardware::build(explicit_node, Catalog::load_builtin());
    REQUIRE(a->links().size() == b->links().size());
    for (std::size_t i = 0; i < a->links().size(); ++i) {
        CHECK(a->links()[i].name == b->links()[i].name);
        CHECK(a->links()[i].bandwidth.value == b->links()[i].bandwidth.value);
    }
    for (const auto& ranks : {iota_ranks(0, 8), iota_ranks(0, 32), std::vector<std::uint32_t>{0, 8, 16, 24}})
        CHECK(a->collective_time(OpKind::AllReduce, gibibytes(1.0 / 16), ranks) ==
              b->collective_time(OpKind::AllReduce, gibibytes(1.0 / 16), ranks));
}

TEST_CASE("scale-up domain: impossible domains are input errors naming the key", "[topology][scale_up_domain]") {
    const Catalog catalog = Catalog::load_builtin();
    const auto refused = [&](ClusterSpec s, const std::string& why) {
        INFO(why);
        REQUIRE(scale_up_domain_problem(s).has_value());
        CHECK_THAT(*scale_up_domain_problem(s), Catch::Contains(why));
        try {
            (void)Hardware::build(s, catalog);
            FAIL("built an impossible cluster");
        } catch (const InputError& e) {
            CHECK(e.where().key == "cluster.scale_up_domain");
        }
    };
    ClusterSpec s = nvl72(1);
    s.scale_up_domain = 2;
    refused(s, "smaller than a node of 4 GPUs");
    s.scale_up_domain = 70;
    refused(s, "not a whole number of nodes of 4 GPUs");
    s.scale_up_domain = 48;
    refused(s, "does not divide the cluster's 72 GPUs");
    s.scale_up_domain = 72;
    s.intra_node = IntraNodeKind::Pcie;
    refused(s, "needs NVLink switches");
    s.intra_node = IntraNodeKind::NvSwitch;
    CHECK_FALSE(scale_up_domain_problem(s).has_value());
}

TEST_CASE("scale-up domain: the catalog's GB200 and GB300 are NVL72 systems", "[catalog][scale_up_domain]") {
    const Catalog catalog = Catalog::load_builtin();
    for (const char* name : {"gb200", "gb300"}) {
        INFO(name);
        const GpuSpec& g = catalog.gpu(name);
        REQUIRE(g.system.has_value());
        CHECK(g.system->gpus_per_node == 4);
        CHECK(g.system->scale_up_domain == 72);
        CHECK(g.system->nics_per_node == 4);
        CHECK(g.scaleup_bandwidth.value == Approx(900e9));
    }
    CHECK(catalog.gpu("gb200").system->nic_gbps == 400.0);  // ConnectX-7
    CHECK(catalog.gpu("gb300").system->nic_gbps == 800.0);  // ConnectX-8
    // Parts sold for 8-GPU boards have no system: the cluster keys' own defaults apply.
    for (const char* name : {"b200", "b300", "h20", "mi325x", "mi355x", "h100"}) {
        INFO(name);
        CHECK_FALSE(catalog.gpu(name).system.has_value());
    }
}
