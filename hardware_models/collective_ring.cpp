// Shared pieces of the collective builders, and the ring.
#include <algorithm>

#include "hardware_models/collective_builders.hpp"

namespace cuboid::hw::detail {

void FlowBuilder::hop(std::uint32_t from, std::uint32_t to) {
    const auto route = ctx_.topology.route(from, to);
    crossed_.insert(crossed_.end(), route.begin(), route.end());
}

sim::Flow FlowBuilder::flow(Bytes bytes) {
    std::sort(crossed_.begin(), crossed_.end());
    sim::Flow f;
    f.bytes = bytes;
    for (auto it = crossed_.begin(); it != crossed_.end();) {
        const auto end = std::find_if(it, crossed_.end(), [id = *it](sim::LinkId l) { return l != id; });
        const double uses = static_cast<double>(end - it);
        f.links.push_back({*it, uses / ctx_.costs.efficiency(ctx_.topology.link_class(*it))});
        it = end;
    }
    return f;
}

GroupLayout GroupLayout::of(const Topology& topology, std::span<const std::uint32_t> ranks) {
    GroupLayout g;
    std::vector<int> node_ids;
    for (const std::uint32_t r : ranks) {
        const int node = topology.domain_of(r);  // NCCL treats a multi-node NVLink domain as one node
        const auto it = std::find(node_ids.begin(), node_ids.end(), node);
        if (it == node_ids.end()) {
            node_ids.push_back(node);
            g.nodes.push_back({r});
        } else {
            g.nodes[it - node_ids.begin()].push_back(r);
        }
    }
    g.per_node = g.nodes.empty() ? 0 : static_cast<int>(g.nodes.front().size());
    for (const auto& n : g.nodes) g.uniform = g.uniform && static_cast<int>(n.size()) == g.per_node;
    return g;
}

Time step_latency(const PlanContext& ctx, std::uint32_t a, std::uint32_t b, bool tree) {
    const Topology& t = ctx.topology;
    const CollectiveCosts& c = ctx.costs;
    if (t.domain_of(a) == t.domain_of(b)) return tree ? c.intra_tree_step : c.intra_ring_step;
    const auto route = t.route(a, b);
    const Time net = tree ? c.nccl.net_tree_step : c.nccl.net_ring_step;
    return net + c.switch_latency * t.switch_hops(route);
}

// NCCL ring latency (hardware.md §6.3): base + (steps - inter) * max(intra, overhead) + inter * net.
static Time ring_latency(const PlanContext& ctx, const std::vector<std::uint32_t>& ring, int passes,
                         int nodes) {
    const CollectiveCosts& c = ctx.costs;
    const int p = static_cast<int>(ring.size());
    Time intra = c.intra_ring_step, inter = c.nccl.net_ring_step;
    for (int i = 0; i < p; ++i) {  // the slowest network step of the ring sets the inter latency
        const auto a = ring[i], b = ring[(i + 1) % p];
        if (ctx.topology.domain_of(a) != ctx.topology.domain_of(b))
            inter = std::max(inter, step_latency(ctx, a, b, false));
    }
    if (nodes > 1) intra = std::max(intra, c.nccl.net_overhead);
    const std::int64_t steps = std::int64_t(passes) * (p - 1);
    const std::int64_t inter_steps = std::int64_t(passes) * (nodes - 1);
    return c.nccl.ring_base + intra * (steps - inter_steps) + inter * inter_steps;
}

// Channels: on several nodes with k members each, NCCL runs k rings whose node segments are
// rotated so that every member's NIC carries one ring into and one out of its node; one ring
// through a single NIC would leave the node's other NICs idle.
static std::vector<std::vector<std::uint32_t>> ring_channels(const GroupLayout& g,
                                                            std::span<const std::uint32_t> ranks) {
    if (g.nodes.size() < 2 || !g.uniform || g.per_node < 2) return {{ranks.begin(), ranks.end()}};
    std::vector<std::vector<std::uint32_t>> rings(g.per_node);
    for (int c = 0; c < g.per_node; ++c)
        for (const auto& members : g.nodes)
            for (int i = 0; i < g.per_node; ++i) rings[c].push_back(members[(c + i) % g.per_node]);
    return rings;
}

sim::TransferPlan ring_plan(const PlanContext& ctx, sim::OpKind kind, Bytes bytes,
                            std::span<const std::uint32_t> ranks) {
    const int p = static_cast<int>(ranks.size());
    const GroupLayout g = GroupLayout::of(ctx.topology, ranks);
    const auto rings = ring_channels(g, ranks);
    const int passes = kind == sim::OpKind::AllReduce ? 2 : 1;
    sim::TransferPhase phase;
    phase.latency = ring_latency(ctx, rings.front(), passes, static_cast<int>(g.nodes.size()));
    const Bytes per_channel = bytes * (bus_factor(kind, p) / static_cast<double>(rings.size()));
    for (const auto& ring : rings) {
        FlowBuilder f(ctx);
        for (int i = 0; i < p; ++i) f.hop(ring[i], ring[(i + 1) % p]);
        phase.flows.push_back(f.flow(per_channel));
    }
    return {{std::move(phase)}};
}

}  // namespace cuboid::hw::detail
