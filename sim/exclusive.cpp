// The proof and the closed forms of exclusive.hpp.
#include "sim/exclusive.hpp"

#include <algorithm>
#include <bit>
#include <exception>
#include <stdexcept>
#include <string>

#include "sim/op_order.hpp"
#include "sim/symmetry.hpp"

namespace cuboid::sim {

ExclusiveTransfers::ExclusiveTransfers(const Program& program, std::span<const RankProgram> ranks,
                                       std::span<const Group> groups, const FlowNetwork& network,
                                       TransferPlanner& planner, std::span<const OpListIndex> indexes,
                                       const CommUses* uses)
    : network_(&network) {
    try {
        if (indexes.size() != program.op_lists.size()) {
            throw std::logic_error("exclusive transfers: one op-list index per op list expected");
        }
        analyse(program, ranks, groups, planner, uses != nullptr ? *uses : communication_uses(indexes), indexes);
    } catch (const std::exception&) {
        // Not proved: nothing qualifies, and the run meets the error where it arises.
        known_.assign(groups.size(), {});
        has_exclusive_.assign(groups.size(), false);
        qualified_ = 0;
    }
}

void ExclusiveTransfers::analyse(const Program& program, std::span<const RankProgram> ranks,
                                 std::span<const Group> groups, TransferPlanner& planner, const CommUses& uses,
                                 std::span<const OpListIndex> indexes) {
    known_.assign(groups.size(), {});
    has_exclusive_.assign(groups.size(), false);
    link_users_.assign(network_->link_count(), {});
    link_stamp_.assign(network_->link_count(), 0);
    conditions_.clear();
    ordered_.assign(program.op_lists.size(), {});
    if (uses.size() != program.op_lists.size()) {
        throw std::logic_error("exclusive transfers: one use list per op list expected");
    }
    // Per op list and slot: the streams its communication ops use, one bit each.
    slot_streams_.assign(program.op_lists.size(), {});
    for (std::size_t l = 0; l < program.op_lists.size(); ++l) {
        for (const CommUse& u : uses[l]) {
            auto& streams = slot_streams_[l];
            if (u.slot >= streams.size()) streams.resize(u.slot + 1U, 0);
            streams[u.slot] = static_cast<StreamMask>(streams[u.slot] | (1U << u.stream));
        }
    }
    // (a): plan everything first, then record who uses each link.
    for (const TransferRequest& q : possible_requests(program, ranks, groups, uses)) {
        const TransferPlan* plan = &planner.plan(q);
        auto& known = known_[q.group];
        if (std::none_of(known.begin(), known.end(), [plan](const Known& k) { return k.plan == plan; })) {
            known.push_back({plan, false, {}});
        }
    }
    for (std::uint32_t g = 0; g < known_.size(); ++g) {
        for (const Known& k : known_[g]) {
            for (const TransferPhase& ph : k.plan->phases) {
                for (const Flow& f : ph.flows) {
                    for (const LinkUse& u : f.links) {
                        if (!(u.weight > 0.0) || u.link >= link_users_.size()) continue;
                        auto& users = link_users_[u.link];
                        if (users.empty() || users.back() != g) users.push_back(g);  // g ascends
                    }
                }
            }
        }
    }
    const std::vector<bool> serial = serial_groups(ranks);  // (b)
    for (std::uint32_t g = 0; g < known_.size(); ++g) {
        if (!serial[g]) continue;
        for (Known& k : known_[g]) {
            auto shortcut = closed_form(g, *k.plan);
            if (!shortcut || !add_conditions(program, ranks, groups, g, *k.plan, *shortcut, indexes)) continue;
            k.exclusive = true;
            k.shortcut = *shortcut;
            has_exclusive_[g] = true;
            ++qualified_;
        }
    }
}

// The other groups on the plan's links: each needs a member in common with `group`, whose op
// list tells per instance whether the two can overlap (op_order.hpp). False when one has none.
bool ExclusiveTransfers::add_conditions(const Program& program, std::span<const RankProgram> ranks,
                                        std::span<const Group> groups, std::uint32_t group, const TransferPlan& plan,
                                        Shortcut& shortcut, std::span<const OpListIndex> indexes) {
    // The groups in the order first met, as a search of the list gathered so far would keep them.
    group_mark_.resize(groups.size(), 0);
    rank_mark_.resize(ranks.size(), 0);
    const std::uint32_t seen = next_mark();
    group_mark_[group] = seen;
    std::vector<std::uint32_t> others;
    for (const TransferPhase& ph : plan.phases) {
        for (const Flow& f : ph.flows) {
            for (const LinkUse& u : f.links) {
                if (!(u.weight > 0.0)) continue;
                for (const std::uint32_t h : link_users_[u.link]) {
                    if (group_mark_[h] == seen) continue;
                    group_mark_[h] = seen;
                    others.push_back(h);
                }
            }
        }
    }
    shortcut.first_condition = static_cast<std::uint32_t>(conditions_.size());
    const auto& members = groups[group].ranks;
    for (const std::uint32_t h : others) {
        // The first member (in the group's order) that is also in h, as std::find_first_of finds it.
        const std::uint32_t in_h = next_mark();
        for (const std::uint32_t r : groups[h].ranks) rank_mark_[r] = in_h;
        const auto common = std::find_if(members.begin(), members.end(), [&](std::uint32_t r) { return rank_mark_[r] == in_h; });
        if (common == members.end()) {
            conditions_.resize(shortcut.first_condition);
            return false;
        }
        const RankProgram& rp = ranks[*common];
        // The streams from which the common member posts to h.
        StreamMask streams = 0;
        const auto& per_slot = slot_streams_[rp.op_list];
        for (std::size_t k = 0; k < rp.groups.size() && k < per_slot.size(); ++k) {
            if (rp.groups[k] == h) streams = static_cast<StreamMask>(streams | per_slot[k]);
        }
        if (ordered_[rp.op_list].empty()) ordered_[rp.op_list] = ordering_of(program, rp.op_list, indexes);
        conditions_.push_back({static_cast<std::uint32_t>(common - members.begin()), rp.op_list, streams});
    }
    shortcut.last_condition = static_cast<std::uint32_t>(conditions_.size());
    return true;
}

// ordered_streams() of op list `l`, copied from an op list analysed before when the two agree in
// everything it reads (same_order_inputs).
std::vector<StreamMask> ExclusiveTransfers::ordering_of(const Program& program, std::uint32_t l,
                                                          std::span<const OpListIndex> indexes) const {
    const OpList& list = program.op_lists[l];
    for (std::size_t k = 0; k < ordered_.size(); ++k) {
        if (k != l && !ordered_[k].empty() && same_order_inputs(program.op_lists[k], list)) return ordered_[k];
    }
    return ordered_streams(indexes[l]);
}

bool ExclusiveTransfers::holds(const Shortcut& shortcut, std::span<const MemberOp> ops) const {
    for (std::uint32_t c = shortcut.first_condition; c < shortcut.last_condition; ++c) {
        const Condition& k = conditions_[c];
        if ((ordered_[k.op_list][ops[k.member].op] & k.streams) != k.streams) return false;
    }
    return true;
}

bool ExclusiveTransfers::holds(const Shortcut& shortcut, std::uint32_t op) const {
    for (std::uint32_t c = shortcut.first_condition; c < shortcut.last_condition; ++c) {
        const Condition& k = conditions_[c];
        if ((ordered_[k.op_list][op] & k.streams) != k.streams) return false;
    }
    return true;
}

// (b): a group is serial when no rank posts ops on it from two streams (two slots of one rank
// may name the same group: their streams count together).
std::vector<bool> ExclusiveTransfers::serial_groups(std::span<const RankProgram> ranks) const {
    std::vector<bool> serial(known_.size(), true);
    const auto& slot_streams = slot_streams_;
    constexpr std::uint32_t kNobody = 0xffffffffU;
    std::vector<std::uint32_t> seen_by(known_.size(), kNobody);  // last rank that named the group
    std::vector<std::uint32_t> streams_of(known_.size(), 0);      // that rank's streams on it
    for (std::uint32_t r = 0; r < ranks.size(); ++r) {
        const RankProgram& rp = ranks[r];
        if (rp.op_list >= slot_streams.size()) continue;  // the run reports it
        const auto& streams = slot_streams[rp.op_list];
        for (std::size_t k = 0; k < streams.size() && k < rp.groups.size(); ++k) {
            const std::uint32_t g = rp.groups[k];
            if (g >= serial.size() || streams[k] == 0) continue;
            if (seen_by[g] != r) {
                seen_by[g] = r;
                streams_of[g] = 0;
            }
            streams_of[g] |= streams[k];
            if (std::popcount(streams_of[g]) > 1) serial[g] = false;
        }
    }
    return serial;
}

// (a) for this plan, (c), and the sum over phases of latency + slowest solo flow.
std::optional<ExclusiveTransfers::Shortcut> ExclusiveTransfers::closed_form(std::uint32_t group,
                                                                            const TransferPlan& plan) {
    Shortcut s;
    for (const TransferPhase& ph : plan.phases) {
        ++stamp_;
        Time slowest{0};
        for (const Flow& f : ph.flows) {
            for (const LinkUse& u : f.links) {
                if (!(u.weight > 0.0)) continue;
                if (u.link >= link_users_.size() || link_stamp_[u.link] == stamp_) return std::nullopt;
                link_stamp_[u.link] = stamp_;
            }
            const std::optional<Time> d = network_->solo_duration(f.links, f.bytes);
            if (!d) return std::nullopt;
            slowest = std::max(slowest, *d);
            if (FlowNetwork::waits(f.links, f.bytes)) ++s.flows;
        }
        s.duration += ph.latency + slowest;
    }
    return s;
}

std::optional<ExclusiveTransfers::Shortcut> ExclusiveTransfers::find(std::uint32_t group, const TransferPlan& plan) const {
    if (group >= known_.size()) return std::nullopt;
    for (const Known& k : known_[group]) {
        if (k.plan != &plan) continue;
        if (!k.exclusive) return std::nullopt;
        return k.shortcut;
    }
    // Not enumerated (or a planner that does not cache plans): the network, after a check. The
    // engine asks again only when a group's request changes, so the check is rare.
    check_unknown(group, plan);
    return std::nullopt;
}

// A plan nobody enumerated takes the network; it must not touch a link that a shortcut of another
// group assumes is its own.
void ExclusiveTransfers::check_unknown(std::uint32_t group, const TransferPlan& plan) const {
    for (const TransferPhase& ph : plan.phases) {
        for (const Flow& f : ph.flows) {
            for (const LinkUse& u : f.links) {
                if (!(u.weight > 0.0) || u.link >= link_users_.size()) continue;
                const auto& users = link_users_[u.link];
                if (std::binary_search(users.begin(), users.end(), group)) continue;  // accounted for
                for (const std::uint32_t owner : users) {
                    if (!has_exclusive_[owner]) continue;
                    throw std::logic_error("transfer of group " + std::to_string(group) +
                                           " was not among the possible requests and uses a link of group " +
                                           std::to_string(owner));
                }
            }
        }
    }
}

}  // namespace cuboid::sim
