#include "strategies/tensor_modes/atp_comm_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace cuboid {
namespace {

using hw::IntraNodeKind;
using hw::NetworkTopology;

// Levels inside a node. nvswitch: a GPU's one up-link to the switch; nvlink-mesh: the direct link
// of a GPU pair (per-GPU rate / (GPUs - 1)), which is what one ring edge gets; pcie: the GPU's
// x16 link, then the x16 up-link of each PCIe switch to the host (hardware_models/topology.hpp).
void add_node_levels(CommMatrix& m, const hw::ClusterSpec& c, const hw::Catalog& catalog) {
    const hw::GpuSpec& gpu = catalog.gpu(c.gpu);
    const hw::NodeKindSpec& node = catalog.node_kind(c.intra_node);
    const double eff = node.protocol_efficiency;
    const int g = c.gpus_per_node;
    if (g == 1) {  // a lone GPU reaches its NIC over the host link
        m.levels.push_back({"gpu", 1, gpu.host_link_bandwidth * eff, node.nccl_ring_step});
        return;
    }
    if (c.intra_node == IntraNodeKind::Pcie) {
        const BytesPerSecond x16 = c.intra_node_gbps ? gigabytes_per_second(*c.intra_node_gbps)
                                                     : gpu.host_link_bandwidth;
        m.levels.push_back({"gpu", 1, x16 * eff, node.nccl_ring_step});
        const int per_switch = std::max(1, node.gpus_per_switch);
        if (per_switch > 1 && per_switch < g && g % per_switch == 0)
            m.levels.push_back({"pcie-switch", per_switch, gpu.host_link_bandwidth * eff, node.nccl_ring_step});
        return;
    }
    BytesPerSecond link = c.intra_node_gbps ? gigabytes_per_second(*c.intra_node_gbps) : gpu.scaleup_bandwidth;
    if (c.intra_node == IntraNodeKind::NvLinkMesh) link = link / static_cast<double>(g - 1);
    m.levels.push_back({"gpu", 1, link * eff, node.nccl_ring_step});
}

// Levels of the network: a node's NICs, then (fat tree, rail-optimized) the group of nodes under
// one leaf / one scalable unit, whose up-links to the spines carry 1/oversubscription of the
// NICs below it. A single switch adds nothing above the node.
void add_network_levels(CommMatrix& m, const hw::ClusterSpec& c, const hw::Catalog& catalog) {
    if (c.nodes <= 1) return;
    const hw::NetworkKindSpec& net = catalog.network_kind(c.inter_node);
    const hw::NcclConstants& nccl = catalog.nccl();
    const Time step = nccl.net_ring_step + nccl.net_overhead;
    const double eff = net.protocol_efficiency;
    const int nics = std::max(1, c.nics_per_node);
    const BytesPerSecond node_up = gigabits_per_second(c.nic_gbps) * (nics * eff);
    // An NVLink domain of several nodes is one level: NVLink inside, its nodes' NICs out of it.
    const int domain_nodes = c.domain_gpus() / c.gpus_per_node;
    if (c.nodes <= domain_nodes) return;
    m.levels.push_back({domain_nodes > 1 ? "domain" : "node", c.domain_gpus(), node_up * domain_nodes, step, true});
    if (c.topology == NetworkTopology::SingleSwitch) return;
    // Ports of a leaf split o : 1 between NICs and spines, as the topology builder does.
    const double o = c.oversubscription;
    const int radix = net.generation_for(c.nic_gbps).switch_radix;
    const int down = std::max(1, static_cast<int>(std::floor(radix * o / (1.0 + o))));
    // fat tree: a leaf holds down/nics whole nodes; rail-optimized: a scalable unit holds `down`
    // nodes (one port of each rail leaf per node).
    const int nodes_per_unit =
        c.topology == NetworkTopology::FatTree ? std::max(1, down / nics) : down;
    if (c.nodes <= nodes_per_unit || (domain_nodes > 1 && nodes_per_unit <= domain_nodes)) return;
    m.levels.push_back({c.topology == NetworkTopology::FatTree ? "leaf" : "scalable-unit",
                        nodes_per_unit * c.gpus_per_node, node_up * (nodes_per_unit / o), step, true});
}

// NCCL's ring all-reduce latency for one group (base + intra steps + network steps).
Time ring_latency(const CommMatrix& m, const std::vector<std::uint32_t>& g) {
    if (g.size() < 2) return Time(0);
    std::vector<std::uint32_t> nodes;
    Time net{0};
    for (std::size_t j = 0; j < g.size(); ++j) {
        const std::uint32_t a = g[j], b = g[(j + 1) % g.size()];
        for (const CommLevel& l : m.levels) {
            const auto span = static_cast<std::uint32_t>(l.span_gpus);
            if (l.network && a / span != b / span) net = std::max(net, l.step_latency);
        }
        for (const CommLevel& l : m.levels)
            if (l.network) { nodes.push_back(a / static_cast<std::uint32_t>(l.span_gpus)); break; }
    }
    std::sort(nodes.begin(), nodes.end());
    const auto n = static_cast<std::int64_t>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    const std::int64_t steps = 2 * static_cast<std::int64_t>(g.size() - 1);
    const std::int64_t inter = n > 1 ? 2 * (n - 1) : 0;
    return m.ring_base + m.levels.front().step_latency * (steps - inter) +
           net * inter;
}

}  // namespace

CommMatrix build_comm_matrix(const hw::ClusterSpec& cluster, const hw::Catalog& catalog) {
    CommMatrix m;
    m.gpus = cluster.gpus();
    m.ring_base = catalog.nccl().ring_base;
    add_node_levels(m, cluster, catalog);
    add_network_levels(m, cluster, catalog);
    return m;
}

int CommMatrix::level_between(std::uint32_t a, std::uint32_t b) const {
    int top = -1;
    for (std::size_t k = 0; k < levels.size(); ++k) {
        const auto span = static_cast<std::uint32_t>(levels[k].span_gpus);
        if (a / span != b / span) top = static_cast<int>(k);
    }
    return top;
}

BytesPerSecond CommMatrix::bandwidth(std::uint32_t a, std::uint32_t b) const {
    const int top = level_between(a, b);
    if (top < 0) return BytesPerSecond(std::numeric_limits<double>::infinity());
    BytesPerSecond bw = levels[0].uplink;
    for (int k = 1; k <= top; ++k) bw = std::min(bw, levels[static_cast<std::size_t>(k)].uplink);
    return bw;
}

std::string CommMatrix::describe() const {
    std::string out;
    for (const CommLevel& l : levels)
        out += fmt::format("{}{} ({} GPUs): {:.1f} GB/s", out.empty() ? "" : "; ", l.name, l.span_gpus,
                           l.uplink.value / 1e9);
    return out;
}

RingShare concurrent_ring_share(const CommMatrix& m, std::span<const std::vector<std::uint32_t>> groups) {
    // Ring edges leaving each unit of each level, over all the groups at once.
    std::vector<std::vector<int>> leaving(m.levels.size());
    for (std::size_t k = 0; k < m.levels.size(); ++k)
        leaving[k].assign(static_cast<std::size_t>(m.gpus / m.levels[k].span_gpus + 1), 0);
    auto for_each_crossing = [&](auto&& visit) {
        for (const auto& g : groups)
            for (std::size_t j = 0; g.size() > 1 && j < g.size(); ++j) {
                const std::uint32_t a = g[j], b = g[(j + 1) % g.size()];
                for (std::size_t k = 0; k < m.levels.size(); ++k) {
                    const auto span = static_cast<std::uint32_t>(m.levels[k].span_gpus);
                    if (a / span != b / span) visit(k, static_cast<std::size_t>(a / span));
                }
            }
    };
    for_each_crossing([&](std::size_t k, std::size_t unit) { ++leaving[k][unit]; });
    RingShare share{BytesPerSecond(std::numeric_limits<double>::infinity()), Time(0)};
    for_each_crossing([&](std::size_t k, std::size_t unit) {
        share.bandwidth = std::min(share.bandwidth, m.levels[k].uplink / static_cast<double>(leaving[k][unit]));
    });
    for (const auto& g : groups) share.allreduce_latency = std::max(share.allreduce_latency, ring_latency(m, g));
    return share;
}

}  // namespace cuboid
