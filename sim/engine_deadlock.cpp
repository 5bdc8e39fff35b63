// The diagnosis thrown when the event queue runs dry with ops left (engine.hpp).
#include <string>

#include <fmt/format.h>

#include "sim/engine.hpp"
#include "sim/names.hpp"

namespace cuboid::sim {
namespace {

constexpr int kMaxListed = 10;

}  // namespace

void Engine::report_deadlock() const {
    std::uint64_t unfinished = 0;
    std::string stuck;
    int listed = 0;
    for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
        const RankState& R = ranks_[r];
        unfinished += R.remaining;
        for (int s = 0; s < R.index->stream_count && listed < kMaxListed; ++s) {
            const auto& slots = R.index->streams[s];
            if (R.done[s] >= slots.size()) continue;
            const std::uint32_t op = slots[R.done[s]].op;
            const Op& o = R.list->ops[op];
            stuck += fmt::format("\n  rank {}, op '{}' (#{}), stream {}", r, program_.labels.at(o.label), op,
                                 stream_name(program_, static_cast<StreamId>(s)));
            if ((R.busy >> s) & 1U) {
                const auto& slot = slot_refs_[R.slot_base + o.group_slot];
                const Group& g = groups_[slot.group];
                stuck += fmt::format(": posted on group '{}' (#{}), waiting for rank(s)", program_.labels.at(g.label),
                                     slot.group);
                for (const std::uint32_t m : rendezvous_.missing_members(slot.group)) {
                    stuck += fmt::format(" {}", g.ranks[m]);
                }
            } else {
                stuck += ": waiting for its dependencies";
            }
            ++listed;
        }
    }
    throw DeadlockError(
        fmt::format("deadlock: no event left but {} ops unfinished; stuck (first {}):{}", unfinished, listed, stuck));
}

}  // namespace cuboid::sim
