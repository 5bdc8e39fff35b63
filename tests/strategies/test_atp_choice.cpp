// ATP's hierarchical communication matrix and mesh choice (seed_algorithms §3.3): the matrix's
// levels come from the catalog, the cost model reduces to Megatron's four all-reduces at (t, 1),
// the choice follows the interconnect, and the plan's given fields are kept.
#include <catch2/catch.hpp>

#include "hardware_models/catalog.hpp"
#include "strategies/layout.hpp"
#include "strategies/tensor_modes/atp_choice.hpp"
#include "strategies/tensor_modes/tensor_mesh.hpp"

using namespace cuboid;

namespace {

// GPT-like layer (h = 4096, s = 2048, b = 1) on `nodes` A100 nodes of 8 GPUs, tensor group 8*nodes.
Scenario atp_scenario(hw::IntraNodeKind intra, int nodes, int nics) {
    Scenario sc;
    sc.model.layers = 4;
    sc.model.hidden = 4096;
    sc.model.heads = 32;
    sc.model.seq_len = 2048;
    sc.model.vocab = 51200;
    sc.cluster.gpu = "a100-sxm-80gb";
    sc.cluster.nodes = nodes;
    sc.cluster.gpus_per_node = 8;
    sc.cluster.intra_node = intra;
    sc.cluster.inter_node = hw::InterNodeKind::InfiniBand;
    sc.cluster.nic_gbps = 200.0;
    sc.cluster.nics_per_node = nics;
    sc.training.global_batch = 8;
    sc.parallel.tensor = 8 * nodes;
    sc.parallel.tensor_mode = TensorMode::Atp;
    return sc;
}

}  // namespace

TEST_CASE("comm matrix: levels and pair bandwidths from the catalog") {
    const hw::Catalog cat = hw::Catalog::load_builtin();
    const hw::GpuSpec& gpu = cat.gpu("a100-sxm-80gb");
    const double ib_eff = cat.network_kind(hw::InterNodeKind::InfiniBand).protocol_efficiency;

    SECTION("NVSwitch nodes: a GPU's NVLink, then the node's NICs") {
        const Scenario sc = atp_scenario(hw::IntraNodeKind::NvSwitch, 2, 8);
        const CommMatrix m = build_comm_matrix(sc.cluster, cat);
        REQUIRE(m.levels.size() == 2);  // two nodes sit under one leaf: no spine level
        const double nvlink = gpu.scaleup_bandwidth.value * cat.node_kind(hw::IntraNodeKind::NvSwitch).protocol_efficiency;
        const double nics = 8 * 200e9 / 8.0 * ib_eff;  // 8 NICs x 200 Gbit/s = 200 GB/s raw
        CHECK(m.levels[0].uplink.value == Approx(nvlink));
        CHECK(m.levels[1].span_gpus == 8);
        CHECK(m.levels[1].uplink.value == Approx(nics));
        CHECK(m.level_between(0, 7) == 0);
        CHECK(m.level_between(0, 8) == 1);
        CHECK(m.bandwidth(0, 7).value == Approx(nvlink));
        CHECK(m.bandwidth(3, 12).value == Approx(std::min(nvlink, nics)));
    }
    SECTION("PCIe nodes: the x16 link, then the PCIe switch's up-link shared by its GPUs") {
        const Scenario sc = atp_scenario(hw::IntraNodeKind::Pcie, 1, 1);
        const CommMatrix m = build_comm_matrix(sc.cluster, cat);
        REQUIRE(m.levels.size() == 2);
        const double x16 = gpu.host_link_bandwidth.value * cat.node_kind(hw::IntraNodeKind::Pcie).protocol_efficiency;
        CHECK(m.levels[1].span_gpus == cat.node_kind(hw::IntraNodeKind::Pcie).gpus_per_switch);
        CHECK(m.bandwidth(0, 1).value == Approx(x16));
        // Two rings leaving one PCIe switch at once share its up-link: half each.
        const std::vector<std::vector<std::uint32_t>> rings{{0, 2}, {1, 3}};
        CHECK(concurrent_ring_share(m, rings).bandwidth.value == Approx(x16 / 2));
    }
}

TEST_CASE("ATP cost model: (t, 1) column-first is Megatron's four all-reduces") {
    const hw::Catalog cat = hw::Catalog::load_builtin();
    const Scenario sc = atp_scenario(hw::IntraNodeKind::NvSwitch, 1, 1);
    const CommMatrix m = build_comm_matrix(sc.cluster, cat);
    // One ring of 8 on one NVSwitch: each edge gets a GPU's NVLink payload rate. Per layer,
    // forward and backward: 4 all-reduces of [b*s, h] bf16, each alpha + 2(t-1)/t * bytes / B,
    // alpha = NCCL base + 2(t-1) ring steps.
    const double bytes = 2048.0 * 4096.0 * 2.0, t = 8.0;
    const double alpha = to_seconds(cat.nccl().ring_base) +
                         2 * (t - 1) * to_seconds(cat.node_kind(hw::IntraNodeKind::NvSwitch).nccl_ring_step);
    const double expected = 4 * (alpha + 2 * (t - 1) / t * bytes / m.levels[0].uplink.value);
    CHECK(atp_layer_comm_seconds(sc, m, 8, 1, AtpOrder::ColumnFirst) == Approx(expected));
    // (1, t) row-first is the same plan written the other way round.
    CHECK(atp_layer_comm_seconds(sc, m, 1, 8, AtpOrder::RowFirst) == Approx(expected));
}

TEST_CASE("ATP choice: NVSwitch + one IB NIC per node, t = 16 over 2 nodes keeps the heavy axis in the node") {
    // Per layer, with S = b*s*h*2 bytes, a GPU moves (ring all-reduce, 2(g-1)/g of each buffer):
    //   1D 16x1:              2*15/16 * 4S = 7.5S, all of it through the one NIC (one ring per node)
    //   8x2 row-first:  axis 0 (in node) 2*7/8 * 12S/2 = 10.5S over NVLink (240 GB/s payload),
    //                   axis 1 (across)  2*1/2 * 4S/8  = 0.5S per GPU, 8 GPUs share the NIC: 4S
    //   8x2 column-first: the 12S/8 axis crosses: 8 * 1.5S = 12S through the NIC.
    // NIC 23.5 GB/s payload vs NVLink 240: 7.5S/23.5 = 0.32 S/GB > 4S/23.5 + 10.5S/240 = 0.21 S/GB.
    const Scenario sc = atp_scenario(hw::IntraNodeKind::NvSwitch, 2, 1);
    const AtpChoice c = choose_atp(sc, 16);
    CHECK(c.d1 == 8);
    CHECK(c.d2 == 2);
    CHECK(c.order == AtpOrder::RowFirst);
    const CommMatrix m = build_comm_matrix(sc.cluster, hw::Catalog::load_builtin());
    CHECK(c.comm_cost_s < atp_layer_comm_seconds(sc, m, 16, 1, AtpOrder::ColumnFirst));
    CHECK(c.comm_cost_s == Approx(atp_layer_comm_seconds(sc, m, 8, 2, AtpOrder::RowFirst)));
    CHECK(c.why.find("8x2 row-first") != std::string::npos);
}

TEST_CASE("ATP choice: PCIe nodes on the same network choose differently") {
    // In a PCIe node a GPU's x16 link (31 GB/s x 0.8 = 24.8 payload) and a PCIe switch's
    // up-link are no faster than the node's NIC (23.5), so no level is cheap enough to carry the
    // heavy axis: 8x2 row-first pays 10.5S over switch up-links (24.8, one ring each) plus 4S
    // through the NIC = 0.59 S/GB, more than 1D's 7.5S / 23.5 = 0.32 S/GB.
    const Scenario pcie = atp_scenario(hw::IntraNodeKind::Pcie, 2, 1);
    const Scenario nvs = atp_scenario(hw::IntraNodeKind::NvSwitch, 2, 1);
    const AtpChoice a = choose_atp(pcie, 16), b = choose_atp(nvs, 16);
    CHECK((a.d1 != b.d1 || a.order != b.order));
    CHECK(a.d1 == 16);
    CHECK(a.order == AtpOrder::ColumnFirst);
}

TEST_CASE("ATP choice: given mesh and order are kept") {
    Scenario sc = atp_scenario(hw::IntraNodeKind::NvSwitch, 2, 1);
    sc.parallel.atp_mesh = {4, 4};
    AtpChoice c = choose_atp(sc, 16);
    CHECK(c.d1 == 4);
    CHECK(c.d2 == 4);
    sc.parallel.atp_mesh = {0, 0};
    sc.parallel.atp_order = AtpOrder::ColumnFirst;
    c = choose_atp(sc, 16);
    CHECK(c.order == AtpOrder::ColumnFirst);
    // Every candidate has the given order: 5 factor pairs of 16, one order each.
    CHECK(atp_candidates(sc, 16, build_comm_matrix(sc.cluster, hw::Catalog::load_builtin())).size() == 5);
    sc.parallel.atp_mesh = {3, 5};
    CHECK_THROWS_AS(choose_atp(sc, 16), InputError);
}

TEST_CASE("ATP choice: the validated layout keeps the chosen mesh and order, so builders need not choose again") {
    // The case above chooses 8x2 row-first; with auto order the layout must carry RowFirst, which
    // its axes alone cannot tell (program_builder and the CPU executor read the mesh from it).
    const Scenario sc = atp_scenario(hw::IntraNodeKind::NvSwitch, 2, 1);
    const hw::Catalog cat = hw::Catalog::load_builtin();
    const Layout l = validate_plan(sc, cat);
    const TensorMesh chosen = tensor_mesh_of(sc), stored = tensor_mesh_of(sc, l);
    CHECK(chosen.order == AtpOrder::RowFirst);
    CHECK(stored.mode == chosen.mode);
    CHECK(stored.axes == chosen.axes);
    CHECK(stored.order == chosen.order);
    CHECK(tensor_mesh_of(sc, &cat).axes == chosen.axes);
}
