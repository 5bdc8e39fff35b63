// Builders of one collective algorithm's transfer plan (internal to the collective planner).
#pragma once

#include <map>
#include <span>
#include <vector>

#include "hardware_models/collectives.hpp"

namespace cuboid::hw::detail {

struct PlanContext {
    const Topology& topology;
    const CollectiveCosts& costs;
};

// Accumulates the links of routes into one flow; a link used twice gets weight 2 (before the
// protocol efficiency of its class divides the weight). The flow lists its links in id order.
class FlowBuilder {
public:
    explicit FlowBuilder(const PlanContext& ctx) : ctx_(ctx) {}
    void hop(std::uint32_t from, std::uint32_t to);
    sim::Flow flow(Bytes bytes);

private:
    const PlanContext& ctx_;
    std::vector<sim::LinkId> crossed_;  // every link of every hop, repeats kept (counted in flow())
};

// A group's members by node, nodes in order of first appearance, members in group order. A "node"
// here is an NVLink domain: one node, or several joined by cluster.scale_up_domain (NCCL's
// multi-node NVLink treats such a domain as one node: its rings and trees stay on NVLink).
struct GroupLayout {
    std::vector<std::vector<std::uint32_t>> nodes;
    bool uniform = true;  // the same number of members on every node
    int per_node = 1;     // members on the first node

    static GroupLayout of(const Topology& topology, std::span<const std::uint32_t> ranks);
};

// NCCL's latency of one step from `a` to `b` (ring or tree constants), switches included.
Time step_latency(const PlanContext& ctx, std::uint32_t a, std::uint32_t b, bool tree);

sim::TransferPlan ring_plan(const PlanContext& ctx, sim::OpKind kind, Bytes bytes,
                            std::span<const std::uint32_t> ranks);
sim::TransferPlan tree_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks);
sim::TransferPlan hierarchical_plan(const PlanContext& ctx, Bytes bytes,
                                    std::span<const std::uint32_t> ranks);
sim::TransferPlan chain_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks,
                             std::uint32_t root);
// Every member sends `bytes` to the next one in ring order at once (RingExchange), one flow each.
sim::TransferPlan neighbour_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks);
sim::TransferPlan pairwise_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks);
sim::TransferPlan direct_plan(const PlanContext& ctx, Bytes bytes, std::uint32_t from, std::uint32_t to);

}  // namespace cuboid::hw::detail
