// Matches the communication ops that the members of each group post into instances.
//
// As with an NCCL communicator, the k-th op a member posts on a group belongs to instance k, and
// instance k starts once every member has posted it. A fast member may post instance k+1 (from
// another stream) before a slow one has posted k, so each group keeps a short queue of pending
// instances; instances start in order because posting k+1 implies having posted k.
//
// Every post touches this state, for thousands of groups, so it is kept flat: one array of
// posted counts (a group's members side by side), one of ring buffers (each group's pending
// instances) and one of the members' ops of those instances.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/program.hpp"

namespace cuboid::sim {

// A complete instance, as the transfer planner needs it.
struct InstanceInfo {
    OpKind kind = OpKind::AllReduce;  // Send for a Send/Recv pair
    Bytes bytes{0.0};
    std::uint32_t source = 0;  // the sending rank of a pair; the root (first rank) of a broadcast
};

// What a member posts: the op and what the executor needs of it when the instance ends.
struct PostedOp {
    std::uint32_t op = 0;  // index in the member's OpList
    OpKind kind = OpKind::AllReduce;
    StreamId stream = 0;
    OpCategory category = OpCategory::Compute;
    Bytes bytes{0.0};
};

// One member's op in an instance.
struct MemberOp {
    std::uint32_t op = 0;
    StreamId stream = 0;
    OpCategory category = OpCategory::Compute;
};

class Rendezvous {
public:
    explicit Rendezvous(const Program& program) : Rendezvous(program, program.groups, program.ranks) {}
    // The groups and ranks in place of the program's (a folded program's, sim/fold.hpp); the
    // program gives the op lists and labels of messages.
    Rendezvous(const Program& program, std::span<const Group> groups, std::span<const RankProgram> ranks);

    // `member` (index in the group's ranks) posts `posted`. Returns true when this completes the
    // group's oldest pending instance; take() it then. Throws std::logic_error when the op does
    // not match what the other members posted (kind or bytes).
    bool post(std::uint32_t group, std::uint32_t member, const PostedOp& posted);

    // Removes the oldest instance of `group`: its description, and in `ops` the op each member
    // posted, by member (valid until the next post on any group).
    InstanceInfo take(std::uint32_t group, std::span<const MemberOp>& ops);

    // Counts the next `n` instances of `group` as posted by every member and taken, without their
    // ops: the engine ran them in lockstep (sim/engine_lockstep.cpp). Throws std::logic_error when
    // an instance is pending, which lockstep rules out.
    void skip(std::uint32_t group, std::uint32_t n);

    // Members of `group` that have posted fewer instances than the most eager one (diagnostics).
    std::vector<std::uint32_t> missing_members(std::uint32_t group) const;

    // Per group member: instances posted, and the member's rank beside it, so that finding the
    // sending rank of a pair or the root of a collective reads the line the post touches anyway.
    struct Member {
        std::uint32_t posted = 0;
        std::uint32_t rank = 0;
    };
    // The members of `group` in ring order. Cheaper to reach than Program::groups (no pointer to
    // follow, and just touched by the posts), and stable: the array never grows.
    std::span<const Member> members(std::uint32_t group) const {
        return {members_.data() + groups_[group].posted_base, groups_[group].members};
    }

private:
    struct Pending {
        std::uint32_t posted = 0;
        std::uint32_t first_member = 0;  // whose op the others are checked against
        std::uint32_t first_op = 0;
        OpKind first_kind = OpKind::AllReduce;
        InstanceInfo info;
    };
    struct GroupState {
        std::uint32_t posted_base = 0;  // members in members_[posted_base, + members)
        std::uint32_t members = 0;
        std::uint32_t ring_base = 0;    // pending instances in ring_[ring_base, + ring_cap)
        std::uint32_t ring_cap = 0;
        std::uint32_t ops_base = 0;     // their members' ops: ops_[ops_base + i * members + m]
        std::uint32_t head = 0;         // ring index of the oldest pending instance
        std::uint32_t count = 0;        // pending instances
        std::uint32_t started = 0;      // instances taken (an op index is 32 bits, so is this)
    };
    // Ring position of the k-th oldest pending instance.
    static std::uint32_t ring_index(const GroupState& gs, std::uint32_t k) {
        const std::uint32_t i = gs.head + k;
        return i >= gs.ring_cap ? i - gs.ring_cap : i;
    }
    void grow_ring(GroupState& gs);

    void check_match(std::uint32_t group, std::uint64_t instance, const Pending& p, std::uint32_t member,
                     const PostedOp& posted) const;
    [[noreturn]] void reject_pair(std::uint32_t group, std::uint32_t member, const PostedOp& posted) const;

    const Program& program_;
    std::span<const Group> group_defs_;
    std::span<const RankProgram> rank_defs_;
    std::vector<GroupState> groups_;
    std::vector<Member> members_;
    std::vector<Pending> ring_;
    std::vector<MemberOp> ops_;
};

}  // namespace cuboid::sim
