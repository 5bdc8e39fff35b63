// Tree and hierarchical all-reduce across nodes.
#include <cmath>

#include "hardware_models/collective_builders.hpp"

namespace cuboid::hw::detail {
namespace {

int ceil_log2(std::size_t n) { return n <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(double(n)))); }

// Parent of position i in a binary tree laid out as a heap (root 0); -1 for the root.
int heap_parent(int i) { return i == 0 ? -1 : (i - 1) / 2; }

}  // namespace

// NCCL's double binary tree: two binary trees over the nodes, each carrying half of the data, the
// second one mirrored (node j at position N-1-j) so that most interior nodes of one are leaves of
// the other. With k members per node NCCL runs k channels, each leaving the node through another
// member's NIC, so channel c's trees link the c-th members and carry S/(2k) per edge. Inside a
// node the members form a chain (reduce towards the first member, broadcast back).
// A tree is pipelined: reduce up and broadcast down stream through every edge at once, so the
// whole tree moves at the pace of its slowest link, as a ring does. Each (channel, tree) is
// therefore one flow of S/(2k) bytes over all its edges, both directions, and over the node
// chains (the 2k flows together carry the chains' S bytes each way).
sim::TransferPlan tree_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks) {
    const GroupLayout g = GroupLayout::of(ctx.topology, ranks);
    const int n = static_cast<int>(g.nodes.size());
    const int channels = g.uniform ? g.per_node : 1;
    sim::TransferPhase phase;
    int ppn = 1;
    for (const auto& members : g.nodes) ppn = std::max(ppn, static_cast<int>(members.size()));
    const Bytes per_edge = bytes / (2.0 * channels);
    // NCCL's correction of tree bandwidth at medium sizes (nccl.yaml): every link use of the
    // tree weighs 1/factor more, so the tree gets factor x the rate it would otherwise get, alone
    // or sharing links. The flows keep their bytes; a link's load counts the weight, as it does
    // for protocol efficiency.
    const double slowdown = 1.0 / ctx.costs.nccl.tree_allreduce_factor(bytes);
    for (int c = 0; c < channels; ++c) {
        for (int tree = 0; tree < 2; ++tree) {
            FlowBuilder flow(ctx);
            for (const auto& members : g.nodes) {
                for (std::size_t i = 0; i + 1 < members.size(); ++i) {
                    flow.hop(members[i + 1], members[i]);
                    flow.hop(members[i], members[i + 1]);
                }
            }
            auto leader = [&](int pos) {
                const auto& members = g.nodes[tree == 0 ? pos : n - 1 - pos];
                return members[c % members.size()];
            };
            for (int pos = 1; pos < n; ++pos) {
                const std::uint32_t child = leader(pos), parent = leader(heap_parent(pos));
                flow.hop(child, parent);
                flow.hop(parent, child);
            }
            sim::Flow f = flow.flow(per_edge);
            for (auto& use : f.links) use.weight *= slowdown;
            phase.flows.push_back(std::move(f));
        }
    }
    // NCCL tree latency (hardware.md §6.3): base + 2 ((ppn-1) intra + log2(N) net).
    Time net = ctx.costs.nccl.net_tree_step;
    if (n > 1) net = step_latency(ctx, g.nodes[0].front(), g.nodes[1].front(), true);
    phase.latency = ctx.costs.nccl.tree_base +
                    (ctx.costs.intra_tree_step * (ppn - 1) + net * ceil_log2(n)) * 2;
    return {{std::move(phase)}};
}

// Reduce-scatter inside every node, all-reduce of the 1/L shards across nodes among the members
// with the same local position (L rings at once), all-gather inside every node.
sim::TransferPlan hierarchical_plan(const PlanContext& ctx, Bytes bytes,
                                    std::span<const std::uint32_t> ranks) {
    const GroupLayout g = GroupLayout::of(ctx.topology, ranks);
    const int l = g.per_node;
    sim::TransferPlan intra;  // reduce-scatter: one ring per node
    for (const auto& members : g.nodes) {
        auto p = ring_plan(ctx, sim::OpKind::ReduceScatter, bytes, members);
        if (intra.phases.empty()) intra.phases.push_back(std::move(p.phases.front()));
        else for (auto& f : p.phases.front().flows) intra.phases.front().flows.push_back(std::move(f));
    }
    sim::TransferPhase across;
    for (int j = 0; j < l; ++j) {
        std::vector<std::uint32_t> peers;
        for (const auto& members : g.nodes) peers.push_back(members[j]);
        auto p = ring_plan(ctx, sim::OpKind::AllReduce, bytes / static_cast<double>(l), peers);
        across.latency = std::max(across.latency, p.phases.front().latency);
        for (auto& f : p.phases.front().flows) across.flows.push_back(std::move(f));
    }
    sim::TransferPlan plan;
    plan.phases.push_back(intra.phases.front());    // reduce-scatter
    plan.phases.push_back(std::move(across));       // all-reduce across nodes
    plan.phases.push_back(std::move(intra.phases.front()));  // all-gather: same traffic as reduce-scatter
    return plan;
}

}  // namespace cuboid::hw::detail
