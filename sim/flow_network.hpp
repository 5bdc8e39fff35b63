// Flow-level network: flows share link bandwidth max-min fairly, recomputed only where a change
// reaches.
//
// A flow moves `bytes` over weighted link uses; at rate r it loads each link it uses with
// weight * r. Rates follow weighted progressive filling (water-filling): all unfrozen flows rise
// at the same rate until some link is full, the flows crossing it freeze, and the rest keep
// rising. Max-min fairness equalises rates, not link consumption, so a flow that crosses a link
// twice (weight 2) gets the same rate as a flow crossing it once, and loads it twice as much.
// (Bertsekas & Gallager, Data Networks, 6.5.2; SimGrid's lmm solver; Velho et al., "On the
// validity of flow-level TCP network models for grid and cloud simulations", TOMACS 2013.)
//
// A start or an end changes rates only inside its connected component (flows that share links,
// transitively), so only that component is re-shared: thousands of independent tensor-parallel
// rings never touch each other. Often it changes no other rate at all: a flow that starts on links
// with room to spare and becomes the fastest flow on the link that limits it, or ends beside flows
// that are all limited elsewhere. Such a change is settled on the flow's own links (the bottleneck
// test below), however large the component: a tensor-parallel ring beside a data-parallel tree that
// spans the cluster. Completion times are exact to the picosecond: on every rate change
// a flow's remaining bytes advance by rate x elapsed, and its completion is rounded up to the next
// whole picosecond. Rescheduled completions are invalidated lazily by a per-flow version number.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "sim/link_flows.hpp"
#include "sim/transfer.hpp"
#include "sim/units.hpp"

namespace cuboid::sim {

using FlowId = std::uint32_t;
inline constexpr FlowId kNoFlow = std::numeric_limits<FlowId>::max();

// A flow's (new) completion time; completions announced earlier with other versions are void.
struct FlowCompletion {
    FlowId flow = kNoFlow;
    std::uint32_t version = 0;
    Time time;
};

class FlowNetwork {
public:
    explicit FlowNetwork(std::span<const Link> links);

    // Starts a flow at `now` and re-shares its component. `uses` must stay valid until the flow
    // ends (plans live as long as their planner). Returns kNoFlow when there is nothing to wait
    // for: no link with positive weight, or no bytes; such a flow is done at once.
    FlowId start(std::span<const LinkUse> uses, Bytes bytes, Time now, std::uint32_t owner);

    // Starts the flows of one transfer phase together: add() each (its id, or kNoFlow as start()
    // returns), then settle() once at the same `now`. The rates and completion times are those
    // that starting them one by one gives (each component is re-shared once, seeded by its flow
    // started last, as the last one-by-one start would), without re-sharing a growing component
    // once per flow: an all-to-all of P ranks starts P(P-1) flows.
    FlowId add(std::span<const LinkUse> uses, Bytes bytes, Time now, std::uint32_t owner);
    // Likewise for flows that end at the same time: end() each, then settle() once (before any
    // flow starts and before the clock moves). Each component is re-shared once, seeded by the
    // links of the flow that ended last there: the rates the last one-by-one finish() gives.
    void end(FlowId flow, Time now);
    // Re-shares what the flows ended and added since the last settle() changed, ends first.
    void settle(Time now);
    bool unsettled() const { return !ended_.empty() || !added_.empty(); }

    // Ends `flow` at `now`, its announced completion time, and re-shares what it leaves behind.
    void finish(FlowId flow, Time now);

    // Whether a completion announced with (flow, version) still holds.
    bool current(FlowId flow, std::uint32_t version) const {
        return flow < flows_.size() && flows_[flow].active && flows_[flow].version == version;
    }

    // Completions (re)announced since the last call; the caller schedules them, then clears.
    std::vector<FlowCompletion>& completions() { return completions_; }

    std::uint32_t owner(FlowId flow) const { return flows_[flow].owner; }
    BytesPerSecond rate(FlowId flow) const { return BytesPerSecond(flows_[flow].rate); }
    // Bytes the link has carried so far (weight x bytes of every flow over it), up to the last
    // re-share of each flow.
    Bytes carried(LinkId link) const;
    std::size_t active_flows() const { return active_; }
    std::size_t link_count() const { return links_.size(); }

    // How long this network takes to deliver a flow that stays alone on its links from start to
    // end: the rate start() gives a solo flow and the completion announce() rounds up, computed by
    // the same expressions (so to the same picosecond). Zero for a flow start() declares done at
    // once; nullopt when the flow uses a link twice (water-filling then adds up its weights).
    std::optional<Time> solo_duration(std::span<const LinkUse> uses, Bytes bytes) const;
    // Whether start() would run the flow (false: done at once, no completion event).
    static bool waits(std::span<const LinkUse> uses, Bytes bytes);

private:
    struct FlowState {
        const LinkUse* uses = nullptr;
        std::uint32_t use_count = 0;
        std::uint32_t owner = 0;
        std::uint32_t version = 0;
        std::uint32_t mark = 0;   // component search epoch
        bool active = false;
        bool frozen = false;      // water-filling scratch
        bool is_new = false;      // needs a completion even if its rate did not change
        double bytes = 0.0;       // the flow's size
        double remaining = 0.0;   // bytes
        double done_below = 0.0;  // remaining bytes that count as delivered (rounding slack)
        double rate = 0.0;        // bytes per second
        std::int64_t last = 0;    // time `remaining` was last brought up to date (ps)
    };
    // What the component search and water-filling read of a link, its first two flows inline
    // (link_flows.hpp): 96 bytes on a 32-byte boundary, so two cache lines, which prefetch_link()
    // asks for ahead of use. What only a flow's end touches is kept apart (carried_).
    struct alignas(32) LinkState {
        std::uint32_t mark = 0;
        std::uint32_t pos = 0;       // water-filling scratch: index in comp_links_
        std::uint32_t unfrozen = 0;  // water-filling scratch
        double capacity = 0.0;       // bytes per second
        double free = 0.0;
        double weight = 0.0;
        double weight_error = 0.0;  // the rounding error of `weight` as collect_component sums it
        LinkFlows flows;
    };
    static_assert(sizeof(LinkState) == 96);

    FlowId allocate();
    FlowId attach_new(std::span<const LinkUse> uses, Bytes bytes, Time now, std::uint32_t owner, double& solo,
                      bool& alone);
    // True when no other flow (nor another use of f) is on its links; `solo` is then its rate.
    bool attach(FlowId f, double& solo);
    bool detach(FlowId f);  // true when some other flow is left on one of its links
    bool release(FlowId f, Time now);
    void collect_component(FlowId seed_flow, std::span<const LinkUse> seed_links);
    void advance(FlowState& f, std::int64_t now);
    struct Others {
        double load = 0.0;     // weight x rate of the other flows on the link
        double fastest = 0.0;  // the highest rate among them
        bool twice = false;    // the flow itself is on the link more than once
    };
    Others others_on(const LinkState& L, FlowId id) const;
    bool settles_alone(FlowId f, double& rate);
    bool leaves_others_alone(FlowId f) const;
    void water_fill();
    std::size_t freeze_saturated(double level);
    double link_level(const LinkState& L) const;
    // Asks the cache for a link's state (both of its lines) ahead of its use.
    void prefetch_link(LinkId l) const {
        const char* at = reinterpret_cast<const char*>(&links_[l]);
        __builtin_prefetch(at);
        __builtin_prefetch(at + 64);
    }
    static constexpr std::uint32_t kPrefetchAhead = 16;
    // In a loop over flow f's uses, at use i: asks for the link kPrefetchAhead uses on (a ring's
    // flow crosses thousands of links, in no order the cache can guess).
    void prefetch_use(const FlowState& f, std::uint32_t i) const {
        if (i + kPrefetchAhead < f.use_count) prefetch_link(f.uses[i + kPrefetchAhead].link);
    }
    void announce(FlowId id, std::int64_t now);
    void reshare(FlowId seed_flow, std::span<const LinkUse> seed_links, std::int64_t now);

    std::vector<LinkState> links_;
    // Bytes each link carried for the flows that have ended (weight x bytes); those still active
    // add theirs in carried(), so that advancing a flow touches the flow alone.
    std::vector<double> carried_;
    std::vector<FlowState> flows_;
    std::vector<FlowId> free_ids_;
    std::vector<FlowCompletion> completions_;
    std::vector<FlowId> comp_flows_;   // scratch: the component being re-shared
    std::vector<LinkId> comp_links_;   // scratch: its links, in the order the search met them
    std::vector<FlowId> link_flows_met_;  // scratch: the flows on those links, link after link
    // Water-filling scratch, by index in comp_links_: the link's fair level free / weight while
    // some flow on it is still rising, +infinity after.
    std::vector<double> comp_levels_;
    std::vector<double> old_rates_;
    struct LocalLink {
        double level;    // the new flow's residual capacity / weight there
        double fastest;  // the fastest other flow's rate
    };
    std::vector<LocalLink> local_links_;  // settles_alone's scratch
    std::vector<FlowId> added_;        // add()ed flows not yet settled, in the order added
    std::vector<std::span<const LinkUse>> ended_;  // the links of end()ed flows not yet settled
    std::uint32_t epoch_ = 0;
    std::size_t active_ = 0;
};

}  // namespace cuboid::sim
