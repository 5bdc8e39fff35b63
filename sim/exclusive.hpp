// Transfers on links that no other transfer can use while they run: their duration is a closed
// form known when they start, so the engine schedules one event for the whole transfer and leaves
// the flow network alone (docs/simulator.md, "Exclusive transfers").
//
// Proved once per simulation, before the run, on the program the engine runs (the full one, or a
// folded one with its quotient planner):
//   (a) every request the program can make (possible_requests) is planned, and each link with a
//       positive weight records which groups' plans use it. A plan qualifies when each of its
//       links is used by its own group alone, or else conditionally: each other group using one
//       of its links has a member in common with it, and an instance qualifies when, on that
//       member's op list, every op on the streams that post to the other group is ordered with
//       the instance's op (finishes before it is posted, or is posted after it ends; op_order.hpp).
//       The other group's instances then never overlap this one, wherever their links meet;
//   (b) instances of one group never overlap: every member posts all its ops on that group from
//       one stream. A stream holds a posted op until its instance ends, so a member posts instance
//       k+1 only after instance k ended, and instance k+1 starts after that;
//   (c) inside each phase, the flows use disjoint links and no flow uses a link twice.
// By (a) and (b) no other flow is ever on a qualifying transfer's links while it runs, and by (c) its flows do
// not share among themselves, so every flow keeps the rate start() gives a solo flow, and a phase
// lasts its latency plus its slowest flow's solo_duration (the network's own arithmetic): the
// times are those of the network, to the picosecond. Anything not proved takes the network.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/op_list_index.hpp"
#include "sim/program.hpp"
#include "sim/rendezvous.hpp"
#include "sim/symmetry.hpp"
#include "sim/transfer.hpp"

namespace cuboid::sim {

class ExclusiveTransfers {
public:
    struct Shortcut {
        Time duration{0};         // instance start to end
        std::uint32_t flows = 0;  // flows the network would have started (SimResult::flows)
        // The conditions of a conditional qualification, [first, last) of conditions_ (none:
        // the links are the group's alone).
        std::uint32_t first_condition = 0;
        std::uint32_t last_condition = 0;
    };

    ExclusiveTransfers() = default;  // nothing qualifies

    // Plans every possible request of `ranks` (running the op lists of `program`) on `groups`.
    // Whatever fails (a planner error, say) leaves nothing qualified: the run then meets it itself.
    // `indexes`: one OpListIndex per op list of `program`, which the analysis reads instead of the
    // ops; `uses`: communication_uses(indexes) when the caller has it (else computed here).
    ExclusiveTransfers(const Program& program, std::span<const RankProgram> ranks, std::span<const Group> groups,
                       const FlowNetwork& network, TransferPlanner& planner, std::span<const OpListIndex> indexes,
                       const CommUses* uses = nullptr);

    // The closed form for an instance of `group` planned as `plan`; nullopt: use the network.
    // Throws std::logic_error when a plan outside the enumerated requests uses a link of a
    // qualifying plan of another group (the enumeration would then be incomplete).
    std::optional<Shortcut> find(std::uint32_t group, const TransferPlan& plan) const;

    // Whether an instance whose members posted `ops` (by member index) may take `shortcut`: its
    // conditions hold for the ops the common members posted.
    bool holds(const Shortcut& shortcut, std::span<const MemberOp> ops) const;
    // The same when every member posted op `op` of one op list (a lockstep run).
    bool holds(const Shortcut& shortcut, std::uint32_t op) const;

    std::size_t qualified() const { return qualified_; }  // plans with a shortcut

private:
    // The other group's instances cannot overlap one of this group's when, on the op list of
    // the common member (`member` in this group's ranks), the op this instance posts there is
    // ordered with every op of the streams in `streams`.
    struct Condition {
        std::uint32_t member = 0;
        std::uint32_t op_list = 0;
        StreamMask streams = 0;
    };
    struct Known {
        const TransferPlan* plan = nullptr;
        bool exclusive = false;
        Shortcut shortcut;
    };

    void analyse(const Program& program, std::span<const RankProgram> ranks, std::span<const Group> groups,
                 TransferPlanner& planner, const CommUses& uses, std::span<const OpListIndex> indexes);
    std::vector<bool> serial_groups(std::span<const RankProgram> ranks) const;
    std::optional<Shortcut> closed_form(std::uint32_t group, const TransferPlan& plan);
    bool add_conditions(const Program& program, std::span<const RankProgram> ranks, std::span<const Group> groups,
                        std::uint32_t group, const TransferPlan& plan, Shortcut& shortcut,
                        std::span<const OpListIndex> indexes);
    void check_unknown(std::uint32_t group, const TransferPlan& plan) const;
    std::vector<StreamMask> ordering_of(const Program& program, std::uint32_t op_list,
                                          std::span<const OpListIndex> indexes) const;

    const FlowNetwork* network_ = nullptr;
    std::vector<std::vector<std::uint32_t>> link_users_;  // groups whose plans use the link, ascending
    std::vector<Condition> conditions_;
    std::vector<std::vector<StreamMask>> ordered_;  // per op list: ordered_streams(), when needed
    std::vector<std::vector<StreamMask>> slot_streams_;  // per op list and slot: streams posting there
    std::vector<std::uint32_t> link_stamp_;  // scratch for (c)
    std::uint32_t stamp_ = 0;
    // add_conditions' scratch: the groups met on a plan's links and the ranks of one of them, each
    // marked with a number of its own, so that gathering and intersecting them is linear where a
    // data-parallel ring meets hundreds of groups of thousands of ranks.
    std::vector<std::uint32_t> group_mark_, rank_mark_;
    std::uint32_t mark_ = 0;
    std::uint32_t next_mark() {
        if (++mark_ == 0) {  // wrapped: old marks could read as new
            std::fill(group_mark_.begin(), group_mark_.end(), 0);
            std::fill(rank_mark_.begin(), rank_mark_.end(), 0);
            mark_ = 1;
        }
        return mark_;
    }
    std::vector<std::vector<Known>> known_;  // per group: its plans, planned before the run
    std::vector<bool> has_exclusive_;        // per group: some plan qualifies
    std::size_t qualified_ = 0;
};

}  // namespace cuboid::sim
