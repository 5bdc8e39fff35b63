// Matches the communication ops that the members of each group post into instances.
//
// As with an NCCL communicator, the k-th op a member posts on a group belongs to instance k, and
// instance k starts once every member has posted it. A fast member may post instance k+1 (from
// another stream) before a slow one has posted k, so each group keeps a short queue of pending
// instances; instances start in order because posting k+1 implies having posted k.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/program.hpp"

namespace cuboid::sim {

// A complete instance, as the transfer planner needs it.
struct InstanceInfo {
    OpKind kind = OpKind::AllReduce;  // Send for a Send/Recv pair
    Bytes bytes{0.0};
    std::uint32_t source = 0;  // the sending rank of a pair; the root (first rank) of a broadcast
};

class Rendezvous {
public:
    explicit Rendezvous(const Program& program);

    // `member` (index in the group's ranks) posts op `op_index` of its list. Returns true when
    // this completes the group's oldest pending instance; take() it then. Throws std::logic_error
    // when the op does not match what the other members posted (kind or bytes).
    bool post(std::uint32_t group, std::uint32_t member, std::uint32_t op_index, const Op& op);

    // Removes the oldest instance of `group`: its description, and in `ops` (swapped out) the op
    // index each member posted, by member.
    InstanceInfo take(std::uint32_t group, std::vector<std::uint32_t>& ops);

    // Members of `group` that have posted fewer instances than the most eager one (diagnostics).
    std::vector<std::uint32_t> missing_members(std::uint32_t group) const;

private:
    struct Pending {
        std::uint32_t posted = 0;
        std::uint32_t first_member = 0;  // whose op the others are checked against
        std::uint32_t first_op = 0;
        OpKind first_kind = OpKind::AllReduce;
        InstanceInfo info;
        std::vector<std::uint32_t> ops;
    };
    struct GroupState {
        std::vector<std::uint64_t> posted;  // per member: instances posted
        std::uint64_t started = 0;
        std::vector<Pending> pending;  // pending[k - started]
    };

    void check_match(std::uint32_t group, std::uint64_t instance, const Pending& p, std::uint32_t member,
                     std::uint32_t op_index, const Op& op) const;

    const Program& program_;
    std::vector<GroupState> groups_;
};

}  // namespace cuboid::sim
