#include "hardware_models/collectives.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "hardware_models/collective_builders.hpp"
#include "sim/time_overflow.hpp"

namespace cuboid::hw {

const char* to_string(CollectiveAlgorithm a) {
    switch (a) {
        case CollectiveAlgorithm::Ring: return "ring";
        case CollectiveAlgorithm::Tree: return "tree";
        case CollectiveAlgorithm::Hierarchical: return "hierarchical";
        case CollectiveAlgorithm::Chain: return "chain";
        case CollectiveAlgorithm::Pairwise: return "pairwise";
        case CollectiveAlgorithm::Direct: return "direct";
    }
    return "ring";
}

double bus_factor(sim::OpKind kind, int ranks) {
    const double p = std::max(ranks, 1);
    switch (kind) {
        case sim::OpKind::AllReduce: return 2.0 * (p - 1.0) / p;
        case sim::OpKind::AllGather:
        case sim::OpKind::ReduceScatter:
        case sim::OpKind::AllToAll: return (p - 1.0) / p;
        default: return 1.0;
    }
}

CollectiveCosts CollectiveCosts::resolve(const ClusterSpec& spec, const Catalog& catalog) {
    const NodeKindSpec& node = catalog.node_kind(spec.intra_node);
    const NetworkKindSpec& net = catalog.network_kind(spec.inter_node);
    CollectiveCosts c;
    // NVLink links only exist in NVLink nodes, PCIe links everywhere (GPU <-> NIC, pcie nodes).
    c.nvlink_efficiency = node.link_class == LinkClass::NvLink ? node.protocol_efficiency : 1.0;
    c.pcie_efficiency = catalog.node_kind(IntraNodeKind::Pcie).protocol_efficiency;
    c.network_efficiency = net.protocol_efficiency;
    c.intra_ring_step = node.nccl_ring_step;
    c.intra_tree_step = node.nccl_tree_step;
    c.switch_latency = net.switch_latency;
    c.nccl = catalog.nccl();
    return c;
}

double CollectiveCosts::efficiency(LinkClass c) const {
    switch (c) {
        case LinkClass::NvLink: return nvlink_efficiency;
        case LinkClass::Pcie: return pcie_efficiency;
        case LinkClass::Network: return network_efficiency;
    }
    return 1.0;
}

// Plans by everything plan() reads besides the model's own constants (topology, costs, profile):
// kind, bytes, the ranks in ring order and the source, so a remembered plan is the one plan()
// would build. Bounded: past kMaxPlans the table starts afresh (plans in use stay alive through
// their planners' shared pointers), so a long search cannot grow it without limit.
struct CollectiveModel::PlanCache {
    static constexpr std::size_t kMaxPlans = std::size_t{1} << 14;
    struct Key {
        sim::OpKind kind;
        std::uint32_t source;
        double bytes;
        std::vector<std::uint32_t> ranks;
        bool operator==(const Key&) const = default;
    };
    struct Hash {
        std::size_t operator()(const Key& k) const {
            std::size_t h = std::hash<double>{}(k.bytes);  // equal for 0.0 and -0.0, as == is
            const auto add = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
            add(static_cast<std::size_t>(k.kind));
            add(k.source);
            for (const std::uint32_t r : k.ranks) add(r);
            return h;
        }
    };
    std::mutex mutex;
    std::unordered_map<Key, std::shared_ptr<const sim::TransferPlan>, Hash> plans;
};

CollectiveModel::CollectiveModel(const Topology& topology, CollectiveCosts costs,
                                 const HardwareProfile* profile)
    : topology_(topology), costs_(std::move(costs)), profile_(profile), plans_(std::make_unique<PlanCache>()) {}

CollectiveModel::~CollectiveModel() = default;

std::shared_ptr<const sim::TransferPlan> CollectiveModel::shared_plan(sim::OpKind kind, Bytes bytes,
                                                                      std::span<const std::uint32_t> ranks,
                                                                      std::uint32_t source) const {
    PlanCache::Key key{kind, source, bytes.value, {ranks.begin(), ranks.end()}};
    {
        const std::lock_guard lock(plans_->mutex);
        const auto it = plans_->plans.find(key);
        if (it != plans_->plans.end()) return it->second;
    }
    // Built outside the lock: a racing thread builds the same plan, and the first one stored wins.
    auto built = std::make_shared<const sim::TransferPlan>(plan(kind, bytes, ranks, source).plan);
    const std::lock_guard lock(plans_->mutex);
    if (plans_->plans.size() >= PlanCache::kMaxPlans) plans_->plans.clear();
    return plans_->plans.emplace(std::move(key), std::move(built)).first->second;
}

std::vector<CollectiveAlgorithm> CollectiveModel::eligible(sim::OpKind kind,
                                                           std::span<const std::uint32_t> ranks) const {
    using A = CollectiveAlgorithm;
    switch (kind) {
        case sim::OpKind::AllReduce: {
            const auto g = detail::GroupLayout::of(topology_, ranks);
            std::vector<A> out{A::Ring};
            if (g.nodes.size() > 1) out.push_back(A::Tree);
            if (g.nodes.size() > 1 && g.uniform && g.per_node > 1) out.push_back(A::Hierarchical);
            return out;
        }
        case sim::OpKind::AllGather:
        case sim::OpKind::ReduceScatter: return {A::Ring};
        case sim::OpKind::Broadcast: return {A::Chain};
        case sim::OpKind::AllToAll:
        case sim::OpKind::RingExchange: return {A::Pairwise};
        default: return {A::Direct};
    }
}

CollectivePlan CollectiveModel::build(CollectiveAlgorithm algorithm, sim::OpKind kind, Bytes bytes,
                                      std::span<const std::uint32_t> ranks, std::uint32_t source) const {
    const detail::PlanContext ctx{topology_, costs_};
    CollectivePlan p;
    p.algorithm = algorithm;
    if (ranks.size() < 2) {
        p.plan.phases.push_back({});  // a group of one: nothing moves
        return p;
    }
    switch (algorithm) {
        case CollectiveAlgorithm::Ring: p.plan = detail::ring_plan(ctx, kind, bytes, ranks); break;
        case CollectiveAlgorithm::Tree: p.plan = detail::tree_plan(ctx, bytes, ranks); break;
        case CollectiveAlgorithm::Hierarchical: p.plan = detail::hierarchical_plan(ctx, bytes, ranks); break;
        case CollectiveAlgorithm::Chain: p.plan = detail::chain_plan(ctx, bytes, ranks, source); break;
        case CollectiveAlgorithm::Pairwise:
            p.plan = kind == sim::OpKind::RingExchange ? detail::neighbour_plan(ctx, bytes, ranks)
                                                       : detail::pairwise_plan(ctx, bytes, ranks);
            break;
        case CollectiveAlgorithm::Direct: {
            const std::uint32_t to = source == ranks[0] ? ranks[1] : ranks[0];
            const std::uint32_t from = source == ranks[0] || source == ranks[1] ? source : ranks[0];
            p.plan = detail::direct_plan(ctx, bytes, from, to);
            break;
        }
    }
    p.time = closed_form(p.plan);
    return p;
}

CollectivePlan CollectiveModel::plan(sim::OpKind kind, Bytes bytes, std::span<const std::uint32_t> ranks,
                                     std::uint32_t source) const {
    CollectivePlan best;
    bool first = true;
    for (const CollectiveAlgorithm a : eligible(kind, ranks)) {
        CollectivePlan p = build(a, kind, bytes, ranks, source);
        if (first || p.time < best.time) best = std::move(p);
        first = false;
    }
    apply_profile(best, kind, bytes, ranks);
    return best;
}

// Sum over phases of latency + the busiest link's load / bandwidth. For the symmetric plans built
// here every flow of a phase is bottlenecked on equally loaded links, so this is the max-min
// completion time of the phase without other traffic.
Time CollectiveModel::closed_form(const sim::TransferPlan& plan) const {
    const auto links = topology_.links();
    Time total{0};
    std::vector<std::pair<sim::LinkId, double>> uses;  // (link, bytes x weight), flows in order
    for (const auto& phase : plan.phases) {
        uses.clear();
        for (const auto& f : phase.flows)
            for (const auto& use : f.links) uses.emplace_back(use.link, f.bytes.value * use.weight);
        // Stable: a link's load adds its uses in flow order, as a running sum per link would.
        std::stable_sort(uses.begin(), uses.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        double slowest = 0.0;
        for (std::size_t i = 0; i < uses.size();) {
            double load = 0.0;
            std::size_t j = i;
            for (; j < uses.size() && uses[j].first == uses[i].first; ++j) load += uses[j].second;
            slowest = std::max(slowest, load / links[uses[i].first].bandwidth.value);
            i = j;
        }
        total += phase.latency + checked_time(slowest);
    }
    return total;
}

// A measured cost replaces the modelled one: the latency becomes the sample's (alpha, on the first
// phase) and every weight is scaled so that the uncontended bandwidth term equals the rest of the
// measured time (bus_bytes / busbw, or the sample's per-size table: CollectiveSample::cost).
// Under contention the flows keep the shape of the chosen algorithm.
void CollectiveModel::apply_profile(CollectivePlan& p, sim::OpKind kind, Bytes bytes,
                                    std::span<const std::uint32_t> group) const {
    const int ranks = static_cast<int>(group.size());
    if (!profile_ || ranks < 2) return;
    std::vector<int> nodes;
    for (std::uint32_t r : group) nodes.push_back(topology_.node_of(r));
    std::sort(nodes.begin(), nodes.end());
    const int span = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    const CollectiveSample* s = profile_->collective(kind, ranks, span, to_string(p.algorithm));
    if (!s) return;
    Time latency{0};
    for (auto& phase : p.plan.phases) latency += std::exchange(phase.latency, Time{0});
    const CollectiveCost cost = s->cost(bytes.value);
    p.plan.phases.front().latency = cost.latency;
    const double modelled = to_seconds(p.time - latency);
    const double measured = cost.bandwidth_seconds;
    if (modelled > 0.0)
        for (auto& phase : p.plan.phases)
            for (auto& f : phase.flows)
                for (auto& use : f.links) use.weight *= measured / modelled;
    p.time = closed_form(p.plan);
}

CollectivePlanner::CollectivePlanner(const CollectiveModel& model, const sim::Program& program)
    : model_(model), program_(program), by_group_(program.groups.size()), last_(program.groups.size()) {}

std::optional<std::vector<sim::LinkId>> CollectivePlanner::route(std::uint32_t from, std::uint32_t to) {
    const auto links = model_.topology().route(from, to);
    return std::vector<sim::LinkId>(links.begin(), links.end());
}

bool CollectivePlanner::route_into(std::uint32_t from, std::uint32_t to, std::vector<sim::LinkId>& out) {
    const auto links = model_.topology().route(from, to);
    out.assign(links.begin(), links.end());
    return true;
}

const sim::TransferPlan& CollectivePlanner::plan(const sim::TransferRequest& r) {
    using K = sim::OpKind;
    const K kind = r.kind == K::Recv ? K::Send : r.kind;  // both halves of a pair name one transfer
    const bool sourced = kind == K::Send || kind == K::Broadcast;
    const std::uint32_t source = sourced ? r.source : 0u;
    Last& last = last_.at(r.group);
    if (last.plan && last.kind == kind && last.bytes == r.bytes.value && last.source == source) return *last.plan;
    const sim::TransferPlan& found = lookup(r.group, kind, r.bytes.value, source, r);
    last = {kind, source, r.bytes.value, &found};
    return found;
}

const sim::TransferPlan& CollectivePlanner::lookup(std::uint32_t group, sim::OpKind kind, double bytes,
                                                   std::uint32_t source, const sim::TransferRequest& r) {
    std::vector<Entry>& entries = by_group_[group];
    for (const Entry& e : entries) {
        if (e.kind == kind && e.bytes == bytes && e.source == source) return *e.plan;
    }
    entries.push_back({kind, bytes, source, model_.shared_plan(kind, r.bytes, program_.groups[group].ranks, source)});
    return *entries.back().plan;
}

}  // namespace cuboid::hw
