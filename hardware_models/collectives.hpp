// Collectives as flows on the topology: NCCL's algorithms decomposed into phases of flows, the
// algorithm chosen as NCCL chooses it (smallest modelled time, hardware.md §6.1), and plans cached
// per communication instance shape.
//
// Conventions (S = TransferRequest::bytes):
// - all-reduce, broadcast, send/recv: S = the buffer of one rank.
// - all-gather and reduce-scatter: S = the FULL buffer (all-gather output, reduce-scatter input),
//   i.e. P x the per-rank shard, as nccl-tests reports sizes (hardware.md §5.0); a ring moves
//   (P-1)/P * S through every rank.
// - all-to-all: S = one rank's whole send buffer; it sends S/P to each peer.
//
// Protocol efficiency (the payload fraction of line rate: NVLink 0.80, PCIe 0.80, InfiniBand
// 0.94, ...; catalog nodes.yaml / networks.yaml) appears exactly once: as the weight of a flow on
// each link it crosses (weight = uses / efficiency of the link's class). Links keep their
// datasheet line rate, so reports and link utilisation stay in physical units, and one flow that
// crosses NVLink and InfiniBand pays each link's own overhead.
//
// Latency is NCCL's model for the Simple protocol (hardware.md §6.3; constants in nccl.yaml):
//   ring AR/AG/RS: base + (steps - inter) * max(intra_step, net_overhead) + inter * net_step,
//     steps = 2(P-1) (AR) or P-1, inter = 2(N-1) or N-1 for N nodes;
//   tree AR: base + 2 * ((ppn-1) * intra_tree_step + ceil(log2 N) * net_tree_step);
//   broadcast (chain): base + sum of the steps' latencies; send/recv: base + one step;
//   each network step also pays switch_latency per switch crossed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/profile.hpp"
#include "hardware_models/topology.hpp"
#include "sim/program.hpp"
#include "sim/transfer.hpp"

namespace cuboid::hw {

enum class CollectiveAlgorithm : std::uint8_t {
    Ring,          // AR / AG / RS: one flow per channel around the ring
    Tree,          // AR across nodes: NCCL's double binary tree over nodes, chains inside nodes
    Hierarchical,  // AR: reduce-scatter in node, all-reduce across nodes per local rank, all-gather
    Chain,         // broadcast: pipelined chain from the root
    Pairwise,      // all-to-all: one flow per ordered pair
    Direct,        // send/recv: one flow along the route
};
const char* to_string(CollectiveAlgorithm a);

// Constants the planner needs, resolved from the catalog for one cluster.
struct CollectiveCosts {
    double nvlink_efficiency = 0.8;
    double pcie_efficiency = 0.8;
    double network_efficiency = 0.94;
    Time intra_ring_step{0};
    Time intra_tree_step{0};
    Time switch_latency{0};
    NcclConstants nccl;

    static CollectiveCosts resolve(const ClusterSpec& spec, const Catalog& catalog);
    double efficiency(LinkClass c) const;
};

struct CollectivePlan {
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
    sim::TransferPlan plan;
    Time time{0};  // uncontended: sum over phases of latency + max over links of load / bandwidth
};

class CollectiveModel {
public:
    // `topology` and `profile` (may be null) must outlive the model.
    CollectiveModel(const Topology& topology, CollectiveCosts costs, const HardwareProfile* profile);
    ~CollectiveModel();

    // The algorithm NCCL would pick (smallest modelled time among the eligible ones), with a
    // calibrated profile's alpha-beta applied when it measured this collective and group size.
    CollectivePlan plan(sim::OpKind kind, Bytes bytes, std::span<const std::uint32_t> ranks,
                        std::uint32_t source) const;
    // One algorithm, without the profile (tests, comparisons).
    CollectivePlan build(CollectiveAlgorithm algorithm, sim::OpKind kind, Bytes bytes,
                         std::span<const std::uint32_t> ranks, std::uint32_t source) const;
    std::vector<CollectiveAlgorithm> eligible(sim::OpKind kind, std::span<const std::uint32_t> ranks) const;

    // Uncontended time of a plan on this topology.
    Time closed_form(const sim::TransferPlan& plan) const;

    // plan(kind, bytes, ranks, source).plan, remembered for every planner of this model: sweep
    // points of one cluster ask for the same collectives on the same ranks again and again.
    // Thread-safe. Kinds other than Send and Broadcast ignore `source`: pass 0 for them, so that
    // equal requests find one entry.
    std::shared_ptr<const sim::TransferPlan> shared_plan(sim::OpKind kind, Bytes bytes,
                                                         std::span<const std::uint32_t> ranks,
                                                         std::uint32_t source) const;

    const Topology& topology() const { return topology_; }
    const CollectiveCosts& costs() const { return costs_; }

private:
    void apply_profile(CollectivePlan& p, sim::OpKind kind, Bytes bytes, std::span<const std::uint32_t> group) const;

    struct PlanCache;

    const Topology& topology_;
    CollectiveCosts costs_;
    const HardwareProfile* profile_;
    std::unique_ptr<PlanCache> plans_;
};

// sim's planner: one per simulation, caching plans by (group, kind, bytes, source).
class CollectivePlanner final : public sim::TransferPlanner {
public:
    CollectivePlanner(const CollectiveModel& model, const sim::Program& program);
    const sim::TransferPlan& plan(const sim::TransferRequest& request) override;
    // The topology's route (symmetry folding matches routes to map links onto links).
    std::optional<std::vector<sim::LinkId>> route(std::uint32_t from, std::uint32_t to) override;
    bool route_into(std::uint32_t from, std::uint32_t to, std::vector<sim::LinkId>& out) override;

private:
    // Plans of one group: a group issues few distinct (kind, size, source) requests, so a short
    // list scanned linearly beats hashing on this hot path. Plans are boxed (and shared with the
    // model's cache) so that references handed out stay valid as the list grows.
    struct Entry {
        sim::OpKind kind;
        double bytes;
        std::uint32_t source;
        std::shared_ptr<const sim::TransferPlan> plan;
    };
    // The last plan handed out per group, in one flat array: a group mostly repeats its previous
    // request, and this finds it with one memory access instead of two dependent ones.
    struct Last {
        sim::OpKind kind = sim::OpKind::AllReduce;
        std::uint32_t source = 0;
        double bytes = 0.0;
        const sim::TransferPlan* plan = nullptr;  // null: nothing asked yet
    };
    const sim::TransferPlan& lookup(std::uint32_t group, sim::OpKind kind, double bytes, std::uint32_t source,
                                    const sim::TransferRequest& request);

    const CollectiveModel& model_;
    const sim::Program& program_;
    std::vector<std::vector<Entry>> by_group_;
    std::vector<Last> last_;
};

// nccl-tests' bus-bytes factor: all-reduce 2(P-1)/P; all-gather, reduce-scatter, all-to-all
// (P-1)/P; broadcast and send/recv 1 (hardware.md §5.0).
double bus_factor(sim::OpKind kind, int ranks);

}  // namespace cuboid::hw
