// What the executor precomputes once per OpList (not per rank): the ops of every stream in issue
// order, the cross-stream dependencies of each op as stream progress counts, and the chains of
// compute ops that can run as one event.
//
// Streams are serial and run in issue order, so "dependency d has finished" is the same as "the
// stream of d has finished more than pos(d) ops". A rank's whole dependency state is therefore a
// finished-op counter per stream; an op waits for at most one count per other stream, and nothing
// per op and per rank is stored.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/program.hpp"
#include "sim/units.hpp"

namespace cuboid::sim {

inline constexpr int kMaxStreams = 8;

// "Stream `stream` must have finished at least `count` ops."
struct Requirement {
    std::uint32_t count = 0;
    StreamId stream = 0;
};

// One op as the executor sees it, at its position in its stream.
struct StreamSlot {
    std::uint32_t op = 0;         // index in the OpList
    std::uint32_t req_begin = 0;  // requirements: OpListIndex::requirements[req_begin, req_end)
    std::uint32_t req_end = 0;
    std::uint32_t chain_last = 0; // compute chain head: position of the chain's last op
    std::int64_t chain_time = 0;       // chain head: summed durations of the chain (ps)
    std::int64_t chain_recompute = 0;  // chain head: the part of chain_time that is recomputation
    std::int64_t duration = 0;         // compute: the op's own duration (ps), next to its chain
    bool is_comm = false;
    OpCategory category = OpCategory::Compute;
    // Communication: the op's fields that posting needs, copied here so that a post reads only
    // the slot it has at hand.
    OpKind kind = OpKind::Elementwise;
    std::uint16_t group_slot = 0;
    Bytes bytes{0.0};
};

struct OpListIndex {
    // `durations` are the op list's compute durations; with `merge_chains` false every compute op
    // is a chain of its own. Throws std::logic_error on a malformed list (dependency on a later
    // op, stream id past kMaxStreams).
    OpListIndex(const OpList& list, std::span<const Time> durations, bool merge_chains);

    int stream_count = 0;  // 1 + the highest stream id used
    std::array<std::vector<StreamSlot>, kMaxStreams> streams;
    std::vector<Requirement> requirements;
    std::vector<std::uint32_t> position;  // op -> its position in its stream
    // Per stream and position, a bit per other stream that waits for the op there to finish.
    std::array<std::vector<std::uint8_t>, kMaxStreams> awaited_by;
    // Per stream and position: a lockstep run (sim/engine_lockstep.cpp) may begin with the op
    // there, a tensor-parallel collective that the compute stream waits for before doing anything
    // else. Once it starts, every member that runs it from the same position of one op list
    // leaves it at the same time, in the same state.
    std::array<std::vector<bool>, kMaxStreams> lockstep_start;

    // The compute-stream count that the op at `slot` waits for (0: none).
    std::uint32_t compute_requirement(const StreamSlot& slot) const;
    // The count of stream `s` that the op at `slot` waits for (0: none), and whether it waits
    // for any stream but `s`.
    // Inline: the lockstep planner asks it for every chain and collective of a run.
    std::uint32_t requirement_on(const StreamSlot& slot, StreamId s, bool& others) const {
        std::uint32_t count = 0;
        others = false;
        for (std::uint32_t i = slot.req_begin; i < slot.req_end; ++i) {
            if (requirements[i].stream == s) count = requirements[i].count;
            else others = true;
        }
        return count;
    }
    // A collective a lockstep run can hold: tensor-parallel, between all members of its group.
    static bool lockstep_collective(const StreamSlot& slot) {
        return slot.is_comm && slot.category == OpCategory::TensorComm && slot.kind != OpKind::Send &&
               slot.kind != OpKind::Recv;
    }

private:
    void find_lockstep_starts();
};

}  // namespace cuboid::sim
