// Instance matching of rendezvous.hpp.
#include "sim/rendezvous.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/names.hpp"

namespace cuboid::sim {
namespace {

// Pending instances a group's ring holds at first; rings double when a member runs further ahead.
constexpr std::uint32_t kInitialRing = 2;

bool is_p2p(OpKind k) { return k == OpKind::Send || k == OpKind::Recv; }

// The kind a partner must post: the other half of a pair, else the same collective.
OpKind partner_kind(OpKind k) {
    if (k == OpKind::Send) return OpKind::Recv;
    if (k == OpKind::Recv) return OpKind::Send;
    return k;
}

// Buffer sizes of matching ops are computed by the same formula on every member; allow only
// the last bits of a double to differ.
bool same_bytes(Bytes a, Bytes b) {
    return std::abs(a.value - b.value) <= 1e-9 * std::max(std::abs(a.value), std::abs(b.value));
}

}  // namespace

Rendezvous::Rendezvous(const Program& program, std::span<const Group> groups, std::span<const RankProgram> ranks)
    : program_(program), group_defs_(groups), rank_defs_(ranks), groups_(groups.size()) {
    std::size_t members = 0;
    for (const Group& g : groups) members += g.ranks.size();
    members_.resize(members);
    ring_.resize(groups_.size() * kInitialRing);
    ops_.resize(members * kInitialRing);
    std::uint32_t next = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupState& gs = groups_[g];
        gs.members = static_cast<std::uint32_t>(groups[g].ranks.size());
        gs.posted_base = next;
        gs.ring_base = static_cast<std::uint32_t>(g * kInitialRing);
        gs.ring_cap = kInitialRing;
        gs.ops_base = next * kInitialRing;
        for (std::uint32_t m = 0; m < gs.members; ++m) members_[next + m].rank = groups[g].ranks[m];
        next += gs.members;
    }
}

bool Rendezvous::post(std::uint32_t group, std::uint32_t member, const PostedOp& posted) {
    GroupState& gs = groups_[group];
    Member* const group_members = members_.data() + gs.posted_base;
    const std::uint32_t instance = group_members[member].posted++;
    // Posting k implies having posted k-1, so the instance is pending already or the next one.
    const std::uint32_t k = instance - gs.started;
    if (k == gs.count) {
        if (gs.count == gs.ring_cap) grow_ring(gs);
        if (is_p2p(posted.kind) && gs.members != 2) reject_pair(group, member, posted);
        const std::uint32_t i = ring_index(gs, gs.count++);
        Pending& p = ring_[gs.ring_base + i];
        p.posted = 0;
        p.first_member = member;
        p.first_op = posted.op;
        p.first_kind = posted.kind;
        p.info = {is_p2p(posted.kind) ? OpKind::Send : posted.kind, posted.bytes, group_members[0].rank};
    }
    const std::uint32_t i = ring_index(gs, k);
    Pending& p = ring_[gs.ring_base + i];
    // The common case, a match, is decided here; check_match() only builds the error message.
    if (p.posted > 0 && !(posted.kind == partner_kind(p.first_kind) && same_bytes(posted.bytes, p.info.bytes))) {
        check_match(group, instance, p, member, posted);
    }
    if (posted.kind == OpKind::Send) p.info.source = group_members[member].rank;
    ops_[gs.ops_base + i * gs.members + member] = {posted.op, posted.stream, posted.category};
    return ++p.posted == gs.members && k == 0;
}

InstanceInfo Rendezvous::take(std::uint32_t group, std::span<const MemberOp>& ops) {
    GroupState& gs = groups_[group];
    const std::uint32_t i = gs.head;
    ops = std::span<const MemberOp>(ops_.data() + gs.ops_base + i * gs.members, gs.members);
    gs.head = i + 1 == gs.ring_cap ? 0 : i + 1;
    --gs.count;
    ++gs.started;
    return ring_[gs.ring_base + i].info;
}

void Rendezvous::skip(std::uint32_t group, std::uint32_t n) {
    GroupState& gs = groups_[group];
    if (gs.count != 0) throw std::logic_error("rendezvous: an instance is pending on a group run in lockstep");
    Member* const group_members = members_.data() + gs.posted_base;
    for (std::uint32_t m = 0; m < gs.members; ++m) group_members[m].posted += n;
    gs.started += n;
}

// Moves the group's ring, oldest first, to a new region of twice the size at the end of the
// arrays (the old region stays unused: rings grow rarely and only a little).
void Rendezvous::grow_ring(GroupState& gs) {
    const auto cap = gs.ring_cap * 2;
    const auto ring_base = static_cast<std::uint32_t>(ring_.size());
    const auto ops_base = static_cast<std::uint32_t>(ops_.size());
    ring_.resize(ring_.size() + cap);
    ops_.resize(ops_.size() + static_cast<std::size_t>(cap) * gs.members);
    for (std::uint32_t k = 0; k < gs.count; ++k) {
        const std::uint32_t from = ring_index(gs, k);
        ring_[ring_base + k] = ring_[gs.ring_base + from];
        std::copy_n(ops_.begin() + gs.ops_base + from * gs.members, gs.members,
                    ops_.begin() + ops_base + k * gs.members);
    }
    gs.ring_base = ring_base;
    gs.ops_base = ops_base;
    gs.ring_cap = cap;
    gs.head = 0;
}

std::vector<std::uint32_t> Rendezvous::missing_members(std::uint32_t group) const {
    const GroupState& gs = groups_[group];
    const Member* const first = members_.data() + gs.posted_base;
    std::uint32_t most = 0;
    for (std::uint32_t m = 0; m < gs.members; ++m) most = std::max(most, first[m].posted);
    std::vector<std::uint32_t> missing;
    for (std::uint32_t m = 0; m < gs.members; ++m) {
        if (first[m].posted < most) missing.push_back(m);
    }
    return missing;
}

void Rendezvous::reject_pair(std::uint32_t group, std::uint32_t member, const PostedOp& posted) const {
    const Group& g = group_defs_[group];
    const Op& op = program_.op_lists[rank_defs_[g.ranks[member]].op_list].ops[posted.op];
    throw std::logic_error("send/recv op '" + program_.labels.at(op.label) + "' on group '" +
                           program_.labels.at(g.label) + "' of " + std::to_string(g.ranks.size()) +
                           " ranks: a pair needs exactly 2");
}

void Rendezvous::check_match(std::uint32_t group, std::uint64_t instance, const Pending& p, std::uint32_t member,
                             const PostedOp& posted) const {
    const Group& g = group_defs_[group];
    if (posted.kind == partner_kind(p.first_kind) && same_bytes(posted.bytes, p.info.bytes)) return;
    const auto describe = [&](std::uint32_t m, std::uint32_t idx) {
        const auto& rp = rank_defs_[g.ranks[m]];
        const Op& o = program_.op_lists[rp.op_list].ops[idx];
        return "rank " + std::to_string(g.ranks[m]) + " posted " + std::string(op_kind_name(o.kind)) + " of " +
               std::to_string(o.bytes.value) + " bytes ('" + program_.labels.at(o.label) + "', op " +
               std::to_string(idx) + ")";
    };
    throw std::logic_error("communication mismatch on group '" + program_.labels.at(g.label) + "' (#" +
                           std::to_string(group) + ") instance " + std::to_string(instance) + ": " +
                           describe(p.first_member, p.first_op) + ", but " + describe(member, posted.op));
}

}  // namespace cuboid::sim
