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
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/executor.hpp"
#include "sim/memory.hpp"
#include "sim/program.hpp"
#include "sim/units.hpp"

namespace cuboid::sim {

inline constexpr int kMaxStreams = 16;
// One bit per stream of a rank (who is busy, who waits for whom).
using StreamMask = std::uint16_t;
static_assert(kMaxStreams <= 16);

// "Stream `stream` must have finished at least `count` ops."
struct Requirement {
    std::uint32_t count = 0;
    StreamId stream = 0;
};

// How much of a compute chain is recomputation: none, all (the chain's time), or some, kept in
// the otherwise unused word1 of the chain's second op (a mixed chain has two ops at least), next
// to the head in memory: the slot stays at 32 bytes.
enum class ChainRecompute : std::uint8_t { None, All, Mixed };

// One op as the executor sees it, at its position in its stream. 32 bytes, two slots a cache
// line: a point walks about a million of them, and loading them is most of a chain walk's time.
// A compute op and a communication op use the last 16 bytes differently (see the accessors):
// the first its duration and its chain's, the second the fields that posting needs, copied here
// so that a post reads only the slot it has at hand.
struct StreamSlot {
    std::uint32_t op = 0;          // index in the OpList
    std::uint32_t req_begin = 0;   // requirements: OpListIndex::requirements[req_begin, req_begin + req_count)
    std::uint32_t chain_last = 0;  // compute chain head: position of the chain's last op
    std::uint8_t req_count = 0;    // at most one per other stream
    bool is_comm = false;
    OpCategory category = OpCategory::Compute;
    std::uint8_t tag = 0;  // communication: its OpKind; compute chain head: its ChainRecompute
    std::int64_t word0 = 0;  // compute: duration (ps); communication: the bits of bytes
    std::int64_t word1 = 0;  // compute: chain head's summed durations (ps), or see ChainRecompute;
                             // communication: group slot

    std::uint32_t req_end() const { return req_begin + req_count; }
    // Compute: the op's own duration (ps).
    std::int64_t duration() const { return word0; }
    // Compute chain head: summed durations of the chain (ps).
    std::int64_t chain_time() const { return word1; }
    ChainRecompute recompute() const { return static_cast<ChainRecompute>(tag); }
    OpKind kind() const { return static_cast<OpKind>(tag); }
    Bytes bytes() const { return Bytes(std::bit_cast<double>(word0)); }
    std::uint16_t group_slot() const { return static_cast<std::uint16_t>(word1); }
};
static_assert(sizeof(StreamSlot) == 32);

// The part of the chain at `head` of `slots` (a compute stream) that is recomputation (ps).
inline std::int64_t chain_recompute(const std::vector<StreamSlot>& slots, std::uint32_t head) {
    const StreamSlot& h = slots[head];
    switch (h.recompute()) {
        case ChainRecompute::None: return 0;
        case ChainRecompute::All: return h.chain_time();
        case ChainRecompute::Mixed: break;
    }
    return slots[head + 1].word1;
}

// What an index needs of the program around its list: how many communication classes there are
// (a communication op of a category past them is a malformed list), and a bit per class whose
// collectives may form lockstep runs.
struct CommClassRules {
    int count = 0;
    std::uint8_t lockstep = 0;

    static CommClassRules of(const Program& program);  // throws std::logic_error past kMaxCommClasses
};

struct OpListIndex {
    // `durations` are the op list's compute durations; with `merge_chains` false every compute op
    // is a chain of its own. Throws std::logic_error on a malformed list (dependency on a later
    // op, stream id past kMaxStreams, a communication op of no class of `classes`).
    OpListIndex(const OpList& list, std::span<const Time> durations, bool merge_chains, CommClassRules classes);

    int stream_count = 0;  // 1 + the highest stream id used
    // A bit per stream that holds a communication op: the readers of communication ops skip the
    // compute stream, which holds most of a list's ops.
    StreamMask comm_streams = 0;
    std::array<std::vector<StreamSlot>, kMaxStreams> streams;
    std::vector<Requirement> requirements;
    std::vector<std::uint32_t> position;  // op -> its position in its stream
    std::vector<StreamId> stream_of;      // op -> its stream (ordered_streams walks ops in list order)
    OpListTotals totals;                  // op_list_totals(list), taken in the same pass
    // Per stream and position, a bit per other stream that waits for the op there to finish.
    std::array<std::vector<StreamMask>, kMaxStreams> awaited_by;
    // Per stream and position: a lockstep run (sim/engine_lockstep.cpp) may begin with the op
    // there, a collective of a lockstep class that the compute stream waits for before doing
    // anything else. Once it starts, every member that runs it from the same position of one op list
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
        for (std::uint32_t i = slot.req_begin; i < slot.req_end(); ++i) {
            if (requirements[i].stream == s) count = requirements[i].count;
            else others = true;
        }
        return count;
    }
    // A collective a lockstep run can hold: of a lockstep class, between all members of its group.
    bool lockstep_collective(const StreamSlot& slot) const {
        const int c = comm_class_of(slot.category);
        return slot.is_comm && c >= 0 && (lockstep_classes >> c & 1U) != 0 && slot.kind() != OpKind::Send &&
               slot.kind() != OpKind::Recv && slot.kind() != OpKind::RingExchange;
    }
    std::uint8_t lockstep_classes = 0;  // CommClassRules::lockstep

private:
    void find_lockstep_starts();
};

// One index per op list of `program`, with `costs`' durations. simulate() builds them once for
// the engine and the analyses before it (folding, exclusive transfers), which read their slots
// rather than the lists' larger ops. Throws std::logic_error as the constructor does, or when
// `costs` has not one duration list per op list.
std::vector<OpListIndex> index_op_lists(const Program& program, const ProgramCosts& costs, bool merge_chains);

}  // namespace cuboid::sim
