// Broadcast chain, all-to-all and point-to-point plans.
#include <algorithm>

#include "hardware_models/collective_builders.hpp"

namespace cuboid::hw::detail {

// Pipelined chain from the root through the group in ring order: one flow over every hop.
sim::TransferPlan chain_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks,
                             std::uint32_t root) {
    std::vector<std::uint32_t> order(ranks.begin(), ranks.end());
    const auto it = std::find(order.begin(), order.end(), root);
    if (it != order.end()) std::rotate(order.begin(), it, order.end());
    sim::TransferPhase phase;
    phase.latency = ctx.costs.nccl.ring_base;
    FlowBuilder f(ctx);
    for (std::size_t i = 0; i + 1 < order.size(); ++i) {
        f.hop(order[i], order[i + 1]);
        phase.latency += step_latency(ctx, order[i], order[i + 1], false);
    }
    phase.flows.push_back(f.flow(bytes));
    return {{std::move(phase)}};
}

// Every rank sends S/P to every other rank at once (NCCL's all-to-all is grouped send/recv).
sim::TransferPlan pairwise_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks) {
    const double p = static_cast<double>(ranks.size());
    sim::TransferPhase phase;
    Time step{0};
    for (const std::uint32_t a : ranks)
        for (const std::uint32_t b : ranks) {
            if (a == b) continue;
            FlowBuilder f(ctx);
            f.hop(a, b);
            phase.flows.push_back(f.flow(bytes / p));
            step = std::max(step, step_latency(ctx, a, b, false));
        }
    phase.latency = ctx.costs.nccl.ring_base + step;
    return {{std::move(phase)}};
}

sim::TransferPlan neighbour_plan(const PlanContext& ctx, Bytes bytes, std::span<const std::uint32_t> ranks) {
    sim::TransferPhase phase;
    Time step{0};
    const std::size_t p = ranks.size();
    for (std::size_t i = 0; i < p; ++i) {
        const std::uint32_t from = ranks[i], to = ranks[(i + 1) % p];
        FlowBuilder f(ctx);
        f.hop(from, to);
        phase.flows.push_back(f.flow(bytes));
        step = std::max(step, step_latency(ctx, from, to, false));
    }
    phase.latency = ctx.costs.nccl.ring_base + step;
    return {{std::move(phase)}};
}

sim::TransferPlan direct_plan(const PlanContext& ctx, Bytes bytes, std::uint32_t from, std::uint32_t to) {
    sim::TransferPhase phase;
    phase.latency = ctx.costs.nccl.ring_base + (from == to ? Time{0} : step_latency(ctx, from, to, false));
    FlowBuilder f(ctx);
    f.hop(from, to);
    phase.flows.push_back(f.flow(bytes));
    return {{std::move(phase)}};
}

}  // namespace cuboid::hw::detail
