// Precomputation of op_list_index.hpp.
#include "sim/op_list_index.hpp"

#include <stdexcept>
#include <string>

namespace cuboid::sim {
namespace {

using Counts = std::array<std::uint32_t, kMaxStreams>;

// Cross-stream requirements of `op`: the highest dependency position + 1 per other stream.
// Dependencies on the op's own stream are met by stream order already.
Counts requirements_of(const OpList& list, const std::vector<std::uint32_t>& position, std::uint32_t op) {
    Counts need{};
    const Op& o = list.ops[op];
    for (std::uint32_t i = o.first_dep; i < o.first_dep + o.dep_count; ++i) {
        const std::uint32_t d = list.deps[i];
        if (d >= op) {
            throw std::logic_error("op list: op " + std::to_string(op) + " depends on later op " + std::to_string(d));
        }
        const StreamId s = list.ops[d].stream;
        if (s != o.stream) need[s] = std::max(need[s], position[d] + 1);
    }
    return need;
}

bool within(std::span<const Requirement> reqs, const Counts& limit) {
    for (const Requirement& r : reqs) {
        if (r.count > limit[r.stream]) return false;
    }
    return true;
}

}  // namespace

OpListIndex::OpListIndex(const OpList& list, std::span<const Time> durations, bool merge_chains) {
    const auto n = static_cast<std::uint32_t>(list.ops.size());
    if (durations.size() != n) throw std::logic_error("program costs: durations do not match the op list");
    position.resize(n);
    // Sizes first, so that each vector is allocated once: the lists are long (tens of thousands
    // of ops), and growing them by doubling copies and touches twice the memory.
    std::array<std::uint32_t, kMaxStreams> sizes{};
    for (const Op& o : list.ops) {
        if (o.stream >= kMaxStreams) throw std::logic_error("op list: stream id " + std::to_string(o.stream) + " out of range");
        ++sizes[o.stream];
    }
    for (int s = 0; s < kMaxStreams; ++s) streams[s].reserve(sizes[s]);
    requirements.reserve(list.deps.size());
    for (std::uint32_t op = 0; op < n; ++op) {
        const StreamId s = list.ops[op].stream;
        stream_count = std::max(stream_count, s + 1);
        position[op] = static_cast<std::uint32_t>(streams[s].size());
        // Filled in place (a local copied in is read back with wide loads right after its narrow
        // stores: a store-forwarding stall per op).
        StreamSlot& slot = streams[s].emplace_back();
        slot.op = op;
        slot.is_comm = is_communication(list.ops[op].kind);
        slot.category = list.ops[op].category;
        slot.kind = list.ops[op].kind;
        slot.group_slot = list.ops[op].group_slot;
        slot.bytes = list.ops[op].bytes;
        if (!slot.is_comm) slot.duration = durations[op].value;
    }

    // Requirements, and which stream positions some other stream waits for (a bit per waiting
    // stream): a chain must end there, because the waiter has to be woken when that very op
    // finishes.
    for (int s = 0; s < kMaxStreams; ++s) awaited_by[s].assign(streams[s].size(), 0);
    for (std::uint32_t op = 0; op < n; ++op) {
        const Counts need = requirements_of(list, position, op);
        StreamSlot& slot = streams[list.ops[op].stream][position[op]];
        slot.req_begin = static_cast<std::uint32_t>(requirements.size());
        for (int s = 0; s < kMaxStreams; ++s) {
            if (need[s] == 0) continue;
            requirements.push_back({need[s], static_cast<StreamId>(s)});
            awaited_by[s][need[s] - 1] |= static_cast<std::uint8_t>(1U << list.ops[op].stream);
        }
        slot.req_end = static_cast<std::uint32_t>(requirements.size());
    }

    const auto reqs_of = [this](const StreamSlot& slot) {
        return std::span<const Requirement>(requirements).subspan(slot.req_begin, slot.req_end - slot.req_begin);
    };
    // Chains, greedily from each stream's start. Op q+1 joins the chain of head h when it is a
    // compute op, nothing on another stream waits for op q, and q+1 needs no more of the other
    // streams than h did: then q+1 is ready the moment q ends, exactly as without merging.
    for (int s = 0; s < kMaxStreams; ++s) {
        auto& slots = streams[s];
        for (std::uint32_t head = 0; head < slots.size();) {
            std::uint32_t last = head;
            if (merge_chains && !slots[head].is_comm) {
                Counts head_need{};
                for (const Requirement& r : reqs_of(slots[head])) head_need[r.stream] = r.count;
                while (last + 1 < slots.size() && awaited_by[s][last] == 0 && !slots[last + 1].is_comm &&
                       within(reqs_of(slots[last + 1]), head_need)) {
                    ++last;
                }
            }
            StreamSlot& h = slots[head];
            h.chain_last = last;
            for (std::uint32_t p = head; p <= last && !h.is_comm; ++p) {
                const std::int64_t d = durations[slots[p].op].value;
                h.chain_time += d;
                if (slots[p].category == OpCategory::Recompute) h.chain_recompute += d;
            }
            head = last + 1;
        }
    }
    find_lockstep_starts();
}

std::uint32_t OpListIndex::compute_requirement(const StreamSlot& slot) const {
    bool others = false;
    return requirement_on(slot, stream::kCompute, others);
}

void OpListIndex::find_lockstep_starts() {
    const auto& chains = streams[stream::kCompute];
    for (int x = 0; x < kMaxStreams; ++x) {
        const auto& slots = streams[x];
        lockstep_start[x].assign(slots.size(), false);
        if (x == stream::kCompute) continue;
        for (std::uint32_t k = 0; k < slots.size(); ++k) {
            if (!lockstep_collective(slots[k])) continue;
            const std::uint32_t head = compute_requirement(slots[k]);
            if (head >= chains.size()) continue;
            bool others = false;
            lockstep_start[x][k] = requirement_on(chains[head], static_cast<StreamId>(x), others) >= k + 1;
        }
    }
}

}  // namespace cuboid::sim
