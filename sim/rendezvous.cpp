// Instance matching of rendezvous.hpp.
#include "sim/rendezvous.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/names.hpp"

namespace cuboid::sim {
namespace {

bool is_p2p(OpKind k) { return k == OpKind::Send || k == OpKind::Recv; }

// Buffer sizes of matching ops are computed by the same formula on every member; allow only
// the last bits of a double to differ.
// The kind a partner must post: the other half of a pair, else the same collective.
OpKind partner_kind(OpKind k) {
    if (k == OpKind::Send) return OpKind::Recv;
    if (k == OpKind::Recv) return OpKind::Send;
    return k;
}

bool same_bytes(Bytes a, Bytes b) {
    return std::abs(a.value - b.value) <= 1e-9 * std::max(std::abs(a.value), std::abs(b.value));
}

}  // namespace

Rendezvous::Rendezvous(const Program& program) : program_(program), groups_(program.groups.size()) {
    for (std::size_t g = 0; g < groups_.size(); ++g) groups_[g].posted.assign(program.groups[g].ranks.size(), 0);
}

bool Rendezvous::post(std::uint32_t group, std::uint32_t member, std::uint32_t op_index, const Op& op) {
    GroupState& gs = groups_[group];
    const std::uint64_t instance = gs.posted[member]++;
    const auto slot = static_cast<std::size_t>(instance - gs.started);
    if (slot >= gs.pending.size()) gs.pending.resize(slot + 1);
    Pending& p = gs.pending[slot];
    const auto members = static_cast<std::uint32_t>(gs.posted.size());
    if (p.posted == 0) {
        if (is_p2p(op.kind) && members != 2) {
            throw std::logic_error("send/recv op '" + program_.labels.at(op.label) + "' on group '" +
                                   program_.labels.at(program_.groups[group].label) + "' of " +
                                   std::to_string(members) + " ranks: a pair needs exactly 2");
        }
        p.first_member = member;
        p.first_op = op_index;
        p.first_kind = op.kind;
        p.info = {is_p2p(op.kind) ? OpKind::Send : op.kind, op.bytes, program_.groups[group].ranks[0]};
        p.ops.resize(members);
    } else {
        check_match(group, instance, p, member, op_index, op);
    }
    if (op.kind == OpKind::Send) p.info.source = program_.groups[group].ranks[member];
    p.ops[member] = op_index;
    return ++p.posted == members;
}

InstanceInfo Rendezvous::take(std::uint32_t group, std::vector<std::uint32_t>& ops) {
    GroupState& gs = groups_[group];
    Pending& p = gs.pending.front();
    const InstanceInfo info = p.info;
    ops.swap(p.ops);
    p.posted = 0;
    // Recycle the slot (and its buffer) at the back of the queue.
    std::rotate(gs.pending.begin(), gs.pending.begin() + 1, gs.pending.end());
    ++gs.started;
    return info;
}

std::vector<std::uint32_t> Rendezvous::missing_members(std::uint32_t group) const {
    const GroupState& gs = groups_[group];
    const std::uint64_t most = *std::max_element(gs.posted.begin(), gs.posted.end());
    std::vector<std::uint32_t> missing;
    for (std::uint32_t m = 0; m < gs.posted.size(); ++m) {
        if (gs.posted[m] < most) missing.push_back(m);
    }
    return missing;
}

void Rendezvous::check_match(std::uint32_t group, std::uint64_t instance, const Pending& p, std::uint32_t member,
                             std::uint32_t op_index, const Op& op) const {
    const Group& g = program_.groups[group];
    if (op.kind == partner_kind(p.first_kind) && same_bytes(op.bytes, p.info.bytes)) return;
    const auto describe = [&](std::uint32_t m, std::uint32_t idx, OpKind kind, Bytes bytes) {
        const auto& rp = program_.ranks[g.ranks[m]];
        const Op& o = program_.op_lists[rp.op_list].ops[idx];
        return "rank " + std::to_string(g.ranks[m]) + " posted " + std::string(op_kind_name(kind)) + " of " +
               std::to_string(bytes.value) + " bytes ('" + program_.labels.at(o.label) + "', op " +
               std::to_string(idx) + ")";
    };
    const Op& first = program_.op_lists[program_.ranks[g.ranks[p.first_member]].op_list].ops[p.first_op];
    throw std::logic_error("communication mismatch on group '" + program_.labels.at(g.label) + "' (#" +
                           std::to_string(group) + ") instance " + std::to_string(instance) + ": " +
                           describe(p.first_member, p.first_op, first.kind, first.bytes) + ", but " +
                           describe(member, op_index, op.kind, op.bytes));
}

}  // namespace cuboid::sim
