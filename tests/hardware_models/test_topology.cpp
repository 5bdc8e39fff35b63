#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/topology.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

TopologyParams params(int nodes, NetworkTopology topo, int radix) {
    TopologyParams p;
    p.nodes = nodes;
    p.gpus_per_node = 8;
    p.intra = IntraNodeKind::NvSwitch;
    p.gpu_link = gigabytes_per_second(300);
    p.host_link = gigabytes_per_second(31);
    p.nics_per_node = 8;
    p.nic = gigabits_per_second(200);
    p.topology = topo;
    p.switch_radix = radix;
    return p;
}

std::vector<VertexKind> kinds_along(const Topology& t, std::span<const sim::LinkId> route) {
    std::vector<VertexKind> out;
    for (const auto id : route) out.push_back(t.link_target_kind(id));
    return out;
}

std::vector<sim::LinkId> to_vector(std::span<const sim::LinkId> route) { return {route.begin(), route.end()}; }

}  // namespace

TEST_CASE("topology: GPUs of one node talk through the NVSwitch in two links", "[topology]") {
    const Topology t = Topology::build(params(1, NetworkTopology::FatTree, 64));
    // 8 GPUs x (up + down) = 16 links, no network on one node.
    CHECK(t.links().size() == 16);
    const auto r = t.route(2, 5);
    REQUIRE(r.size() == 2);
    CHECK(t.links()[r[0]].name == "n0.gpu2->n0.nvswitch");
    CHECK(t.links()[r[1]].name == "n0.nvswitch->n0.gpu5");
    CHECK(t.link_class(r[0]) == LinkClass::NvLink);
    CHECK(t.links()[r[0]].bandwidth.value == Approx(300e9));
}

TEST_CASE("topology: across nodes on one leaf: GPU, NIC, leaf, NIC, GPU", "[topology]") {
    const Topology t = Topology::build(params(2, NetworkTopology::FatTree, 64));
    // 16 NICs fit on one 32-port-down leaf: no spine.
    const auto r = t.route(3, 8 + 3);
    CHECK(kinds_along(t, r) == std::vector<VertexKind>{VertexKind::Nic, VertexKind::Leaf, VertexKind::Nic,
                                                       VertexKind::Gpu});
    CHECK(t.switch_hops(r) == 1);
    CHECK(t.link_class(r[0]) == LinkClass::Pcie);
    CHECK(t.link_class(r[1]) == LinkClass::Network);
    CHECK(t.links()[r[1]].bandwidth.value == Approx(25e9));  // 200 Gbit/s
}

TEST_CASE("topology: fat tree link count and spine routes between leaves", "[topology]") {
    // 4 nodes x 8 GPUs x 8 NICs, radix 16, no oversubscription: 8 NIC ports and 8 up-links per
    // leaf, 32 NICs -> 4 leaves, 8 spines. Directed links:
    //   GPU<->NVSwitch 2*32, GPU<->NIC 2*32, NIC<->leaf 2*32, leaf<->spine 2*4*8 = 256.
    const Topology t = Topology::build(params(4, NetworkTopology::FatTree, 16));
    CHECK(t.links().size() == 2 * 32 + 2 * 32 + 2 * 32 + 2 * 4 * 8);
    // Node 0's NICs fill leaf 0, node 1's leaf 1: GPU 0 -> GPU 8 crosses a spine.
    const std::vector<sim::LinkId> r = to_vector(t.route(0, 8));
    CHECK(kinds_along(t, r) == std::vector<VertexKind>{VertexKind::Nic, VertexKind::Leaf, VertexKind::Spine,
                                                       VertexKind::Leaf, VertexKind::Nic, VertexKind::Gpu});
    CHECK(t.switch_hops(r) == 3);
    // ECMP: deterministic per pair, spread over spines across pairs.
    CHECK(to_vector(t.route(0, 8)) == r);
    std::set<sim::LinkId> spine_links;
    for (std::uint32_t a = 0; a < 8; ++a)
        for (std::uint32_t b = 8; b < 32; ++b) spine_links.insert(t.route(a, b)[2]);  // leaf -> spine
    CHECK(spine_links.size() >= 4);
}

TEST_CASE("topology: oversubscription removes up-links", "[topology]") {
    // Radix 16 with 3:1: floor(16 * 3/4) = 12 NIC ports, ceil(12/3) = 4 spines per leaf;
    // 32 NICs -> 3 leaves. Links: 3 x 64 (GPU/NIC levels) + 2 * 3 leaves * 4 spines.
    auto p = params(4, NetworkTopology::FatTree, 16);
    p.oversubscription = 3.0;
    const Topology t = Topology::build(p);
    CHECK(t.links().size() == 3 * 64 + 2 * 3 * 4);
}

TEST_CASE("topology: rail-optimized: same rail in one hop, other rails via a spine", "[topology]") {
    // Radix 16: 8 nodes per scalable unit; 4 nodes -> one SU with 8 rail leaves, 8 spines.
    const Topology t = Topology::build(params(4, NetworkTopology::RailOptimized, 16));
    const auto same_rail = t.route(1, 8 + 1);  // NIC 1 of node 0 and of node 1
    CHECK(t.switch_hops(same_rail) == 1);
    CHECK(same_rail.size() == 4);
    const auto other_rail = t.route(1, 8 + 2);
    CHECK(t.switch_hops(other_rail) == 3);
    CHECK(kinds_along(t, other_rail)[2] == VertexKind::Spine);
}

TEST_CASE("topology: single switch and multi-SU rails", "[topology]") {
    const Topology single = Topology::build(params(4, NetworkTopology::SingleSwitch, 16));
    CHECK(single.switch_hops(single.route(0, 31)) == 1);
    // 20 nodes at 8 nodes per SU: node 0 and node 16 share rail 0 but not the SU: via a spine.
    const Topology rails = Topology::build(params(20, NetworkTopology::RailOptimized, 16));
    CHECK(rails.switch_hops(rails.route(0, 8 * 7)) == 1);
    CHECK(rails.switch_hops(rails.route(0, 8 * 16)) == 3);
}

TEST_CASE("topology: nvlink-mesh and pcie nodes", "[topology]") {
    auto p = params(1, NetworkTopology::FatTree, 64);
    p.intra = IntraNodeKind::NvLinkMesh;
    const Topology mesh = Topology::build(p);
    CHECK(mesh.links().size() == 8 * 7);  // one link per ordered pair
    CHECK(mesh.route(0, 5).size() == 1);
    CHECK(mesh.links()[mesh.route(0, 5)[0]].bandwidth.value == Approx(300e9 / 7));
    p.intra = IntraNodeKind::Pcie;
    p.gpu_link = gigabytes_per_second(31);
    const Topology pcie = Topology::build(p);
    CHECK(pcie.route(0, 1).size() == 2);  // same PCIe switch
    CHECK(pcie.route(0, 7).size() == 4);  // switch, host, switch
    CHECK(pcie.link_class(pcie.route(0, 7)[1]) == LinkClass::Pcie);
}

TEST_CASE("topology: 384 DGX nodes stay at a reasonable link count", "[topology]") {
    ClusterSpec spec;
    spec.nodes = 384;
    spec.nic_gbps = 400;  // NDR, radix 64
    const Catalog c = Catalog::load_builtin();
    const Topology t = Topology::build(TopologyParams::resolve(spec, c.gpu("h100-sxm-80gb"), c));
    // 3072 GPUs: 6144 NVSwitch + 6144 NIC + 6144 leaf links; 96 leaves x 32 spines x 2 = 6144.
    CHECK(t.links().size() == 4 * 6144);
    CHECK(t.switch_hops(t.route(0, 3071)) == 3);
}

TEST_CASE("topology: impossible clusters are input errors", "[topology]") {
    const Catalog c = Catalog::load_builtin();
    ClusterSpec spec;
    spec.oversubscription = 0.5;
    CHECK_THROWS_AS(TopologyParams::resolve(spec, c.gpu(spec.gpu), c), InputError);
    spec = {};
    spec.nodes = 0;
    CHECK_THROWS_AS(TopologyParams::resolve(spec, c.gpu(spec.gpu), c), InputError);
}

TEST_CASE("topology: remembered routes equal freshly searched ones, from several threads", "[topology]") {
    // Two identical fat trees: one answers every pair once in order (each a fresh search), the
    // other answers the same pairs twice, from four threads at once, in scrambled orders. A cache
    // keyed wrongly (pair swapped, one direction for both) or unsafe under threads shows here:
    // routes are direction-dependent (D-mod-K picks the spine by destination).
    const TopologyParams p = params(8, NetworkTopology::FatTree, 8);
    const Topology fresh = Topology::build(p);
    const Topology shared = Topology::build(p);
    const auto n = static_cast<std::uint32_t>(fresh.gpus());
    std::vector<std::vector<sim::LinkId>> expected(n * n);
    for (std::uint32_t s = 0; s < n; ++s)
        for (std::uint32_t d = 0; d < n; ++d) expected[s * n + d] = to_vector(fresh.route(s, d));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int pass = 0; pass < 2; ++pass) {
                for (std::uint32_t i = 0; i < n * n; ++i) {
                    const std::uint32_t k = (i * 7919U + static_cast<std::uint32_t>(t) * 131U) % (n * n);
                    if (to_vector(shared.route(k / n, k % n)) != expected[k]) ++mismatches[static_cast<std::size_t>(t)];
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(mismatches == std::vector<int>(4, 0));
}

namespace {

// The documented route between the NICs of two nodes, searched per pair as routing was first
// written: BFS from `src` through leaf/spine switches until `dst` is labelled, then the walk back
// from `dst` takes the (seed mod n)-th of the n in-edges from the level before, in edge order.
std::vector<sim::LinkId> reference_network_route(const TopologyGraph& g, std::size_t src, std::size_t dst,
                                                 std::uint64_t seed) {
    std::vector<int> level(boost::num_vertices(g), -1);
    std::vector<std::size_t> queue{src};
    level[src] = 0;
    for (std::size_t head = 0; head < queue.size() && level[dst] < 0; ++head)
        for (const auto e : boost::make_iterator_range(boost::out_edges(queue[head], g))) {
            const std::size_t v = boost::target(e, g);
            const bool network_switch = g[v].kind == VertexKind::Leaf || g[v].kind == VertexKind::Spine;
            if (level[v] >= 0 || (v != dst && !network_switch)) continue;
            level[v] = level[queue[head]] + 1;
            queue.push_back(v);
        }
    std::vector<sim::LinkId> reversed;
    for (std::size_t v = dst; v != src;) {
        std::vector<TopologyGraph::edge_descriptor> before;
        for (const auto e : boost::make_iterator_range(boost::in_edges(v, g)))
            if (level[boost::source(e, g)] == level[v] - 1) before.push_back(e);
        const auto e = before.at(seed % before.size());
        reversed.push_back(g[e].link);
        v = boost::source(e, g);
    }
    return {reversed.rbegin(), reversed.rend()};
}

std::size_t nic_of(const TopologyGraph& g, std::uint32_t gpu) {  // GPU vertices are numbered as the GPUs
    for (const auto e : boost::make_iterator_range(boost::out_edges(gpu, g)))
        if (g[boost::target(e, g)].kind == VertexKind::Nic) return boost::target(e, g);
    return gpu;
}

}  // namespace

TEST_CASE("topology: routes between nodes equal a per-pair search with the destination's seed", "[topology]") {
    // Routes across nodes reuse one search per source leaf for every destination; they must be
    // the very links a search per (source, destination) pair picks, seed = the destination NIC's
    // port on its leaf (D-mod-K), on every network kind, oversubscribed, and with NICs shared by GPUs.
    TopologyParams oversubscribed = params(8, NetworkTopology::FatTree, 8);
    oversubscribed.oversubscription = 3.0;
    TopologyParams shared_nics = params(6, NetworkTopology::RailOptimized, 8);
    shared_nics.nics_per_node = 4;
    const std::vector<TopologyParams> cases{params(8, NetworkTopology::FatTree, 8), oversubscribed,
                                            params(8, NetworkTopology::RailOptimized, 8),
                                            params(3, NetworkTopology::SingleSwitch, 64), shared_nics};
    for (const TopologyParams& p : cases) {
        const Topology t = Topology::build(p);
        const TopologyGraph& g = t.graph();
        const auto n = static_cast<std::uint32_t>(t.gpus());
        int compared = 0, mismatches = 0;
        for (std::uint32_t s = 0; s < n; ++s)
            for (std::uint32_t d = 0; d < n; ++d) {
                if (t.node_of(s) == t.node_of(d)) continue;
                const std::size_t dst_nic = nic_of(g, d);
                const auto seed = static_cast<std::uint64_t>(
                    p.leaf_port_of_nic(g[dst_nic].index + p.nics_per_node * t.node_of(d)));
                const auto net = reference_network_route(g, nic_of(g, s), dst_nic, seed);
                const auto route = to_vector(t.route(s, d));
                // GPU -> NIC, the network part, NIC -> GPU.
                const std::vector<sim::LinkId> middle(route.begin() + 1, route.end() - 1);
                ++compared;
                if (middle != net) ++mismatches;
            }
        CHECK(compared == static_cast<int>(n) * static_cast<int>(n - n / static_cast<std::uint32_t>(p.nodes)));
        CHECK(mismatches == 0);
    }
}
