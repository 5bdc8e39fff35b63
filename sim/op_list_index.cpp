// Precomputation of op_list_index.hpp.
#include "sim/op_list_index.hpp"

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cuboid::sim {
namespace {

using Counts = std::array<std::uint32_t, kMaxStreams>;

// Cross-stream requirements of `op`: the highest dependency position + 1 per other stream, and a
// bit per stream with one (most ops have none, and the caller then looks at no stream).
// Dependencies on the op's own stream are met by stream order already.
Counts requirements_of(const OpList& list, const std::vector<std::uint32_t>& position, std::uint32_t op,
                       unsigned& streams) {
    Counts need{};
    streams = 0;
    const Op& o = list.ops[op];
    for (std::uint32_t i = o.first_dep; i < o.first_dep + o.dep_count; ++i) {
        const std::uint32_t d = list.deps[i];
        if (d >= op) {
            throw std::logic_error("op list: op " + std::to_string(op) + " depends on later op " + std::to_string(d));
        }
        const StreamId s = list.ops[d].stream;
        if (s == o.stream) continue;
        need[s] = std::max(need[s], position[d] + 1);
        streams |= 1U << s;
    }
    return need;
}

[[noreturn]] void throw_unclassed(std::uint32_t op, const Op& o) {
    throw std::logic_error("op list: op " + std::to_string(op) + " has category " +
                           std::to_string(static_cast<int>(o.category)) +
                           ", which names no communication class of the program");
}

bool within(std::span<const Requirement> reqs, const Counts& limit) {
    for (const Requirement& r : reqs) {
        if (r.count > limit[r.stream]) return false;
    }
    return true;
}

}  // namespace

CommClassRules CommClassRules::of(const Program& program) {
    if (program.comm_classes.size() > static_cast<std::size_t>(kMaxCommClasses)) {
        throw std::logic_error("program: " + std::to_string(program.comm_classes.size()) +
                               " communication classes (at most " + std::to_string(kMaxCommClasses) + ")");
    }
    CommClassRules rules{static_cast<int>(program.comm_classes.size()), 0};
    for (int c = 0; c < rules.count; ++c) {
        if (program.comm_classes[static_cast<std::size_t>(c)].lockstep) {
            rules.lockstep |= static_cast<std::uint8_t>(1U << c);
        }
    }
    return rules;
}

OpListIndex::OpListIndex(const OpList& list, std::span<const Time> durations, bool merge_chains,
                         CommClassRules classes)
    : lockstep_classes(classes.lockstep) {
    const auto n = static_cast<std::uint32_t>(list.ops.size());
    if (durations.size() != n) throw std::logic_error("program costs: durations do not match the op list");
    // Sizes first, so that each vector is allocated once, at its final size: the lists are long
    // (tens of thousands of ops), and growing them by doubling copies and touches twice the
    // memory; slots are then written in place, without a capacity check per op.
    std::array<std::uint32_t, kMaxStreams> sizes{};
    for (const Op& o : list.ops) {
        if (o.stream >= kMaxStreams) throw std::logic_error("op list: stream id " + std::to_string(o.stream) + " out of range");
        ++sizes[o.stream];
    }
    std::array<StreamSlot*, kMaxStreams> slots{};
    std::array<StreamMask*, kMaxStreams> awaited{};
    for (int s = 0; s < kMaxStreams; ++s) {
        if (sizes[s] != 0) stream_count = s + 1;
        streams[s].assign(sizes[s], StreamSlot{});  // copies of one zero slot (resize calls memset per slot)
        awaited_by[s].assign(sizes[s], 0);
        slots[s] = streams[s].data();
        awaited[s] = awaited_by[s].data();
    }
    position.resize(n);
    stream_of.resize(n);
    // At most one requirement per dependency; trimmed to the count after the pass.
    requirements.resize(list.deps.size());
    // Raw pointers in the loop: stores through them could otherwise alias the vectors' own
    // pointers, which the compiler would then reload for every op.
    std::uint32_t* const pos = position.data();
    StreamId* const stream_ids = stream_of.data();
    Requirement* const reqs = requirements.data();
    const Op* const ops = list.ops.data();
    const Time* const times = durations.data();
    std::array<std::uint32_t, kMaxStreams> next{};
    std::uint32_t req_count = 0;
    TotalsWalk walk(list.resident);
    // One pass: the slots, the requirements (dependencies are earlier ops, whose positions are
    // known by then), and which stream positions some other stream waits for (a bit per waiting
    // stream): a chain must end there, because the waiter has to be woken when that very op
    // finishes.
    for (std::uint32_t op = 0; op < n; ++op) {
        const Op& o = ops[op];
        walk.add(o, op);
        const StreamId s = o.stream;
        const std::uint32_t p = next[s]++;
        pos[op] = p;
        stream_ids[op] = s;
        StreamSlot& slot = slots[s][p];
        slot.op = op;
        slot.is_comm = is_communication(o.kind);
        slot.category = o.category;
        if (slot.is_comm) {
            if (comm_class_of(o.category) >= classes.count) throw_unclassed(op, o);
            comm_streams = static_cast<StreamMask>(comm_streams | (1U << s));
            slot.tag = static_cast<std::uint8_t>(o.kind);
            slot.word0 = std::bit_cast<std::int64_t>(o.bytes.value);
            slot.word1 = o.group_slot;
        } else {
            if (comm_class_of(o.category) >= classes.count) throw_unclassed(op, o);
            slot.word0 = times[op].value;
        }
        slot.req_begin = req_count;
        if (o.dep_count == 0) continue;  // most ops: stream order is all they wait for
        unsigned waits = 0;
        const Counts need = requirements_of(list, position, op, waits);
        while (waits != 0) {  // in stream order, which try_start's waits follow
            const int x = std::countr_zero(waits);
            waits &= waits - 1;
            reqs[req_count++] = {need[x], static_cast<StreamId>(x)};
            awaited[x][need[x] - 1] |= static_cast<StreamMask>(1U << s);
        }
        slot.req_count = static_cast<std::uint8_t>(req_count - slot.req_begin);
    }
    requirements.resize(req_count);
    totals = walk.totals();

    const auto reqs_of = [this](const StreamSlot& slot) {
        return std::span<const Requirement>(requirements).subspan(slot.req_begin, slot.req_count);
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
            if (!h.is_comm) {
                std::uint32_t recomputed = 0;
                std::int64_t recompute = 0;
                for (std::uint32_t p = head; p <= last; ++p) {
                    h.word1 += slots[p].duration();
                    if (slots[p].category != OpCategory::Recompute) continue;
                    ++recomputed;
                    recompute += slots[p].duration();
                }
                const ChainRecompute r = recomputed == 0                ? ChainRecompute::None
                                         : recomputed == last - head + 1 ? ChainRecompute::All
                                                                         : ChainRecompute::Mixed;
                h.tag = static_cast<std::uint8_t>(r);
                if (r == ChainRecompute::Mixed) slots[head + 1].word1 = recompute;
            }
            head = last + 1;
        }
    }
    find_lockstep_starts();
}

namespace {

// Whether lists `a` and `b` (with their durations) index alike: the same ops but for their labels,
// which no index reads, the same dependencies, durations and resident memory. Compared bit for bit,
// so that equal inputs are certain (a -0.0 against a 0.0 only costs an index built twice). The
// dependencies first: they differ early between lists of different order (the stages of 1F1B,
// each warming up with its own number of forwards), where GPipe's middle stages agree throughout.
// `b` was indexed, so its durations match its ops; `a`'s are checked here, by their count against
// `b`'s, and a list whose count is off is then indexed, which reports it.
bool same_index_inputs(const OpList& a, std::span<const Time> da, const OpList& b, std::span<const Time> db) {
    if (a.ops.size() != b.ops.size() || da.size() != db.size() || a.deps != b.deps ||
        a.resident.value != b.resident.value)
        return false;
    if (std::memcmp(da.data(), db.data(), da.size_bytes()) != 0) return false;
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        Op x = a.ops[i];
        x.label = b.ops[i].label;
        if (std::memcmp(&x, &b.ops[i], sizeof(Op)) != 0) return false;
    }
    return true;
}

}  // namespace

std::vector<OpListIndex> index_op_lists(const Program& program, const ProgramCosts& costs, bool merge_chains) {
    if (costs.durations.size() != program.op_lists.size()) {
        throw std::logic_error("program costs: one duration list per op list expected");
    }
    const CommClassRules classes = CommClassRules::of(program);
    std::vector<OpListIndex> indexes;
    indexes.reserve(program.op_lists.size());
    std::vector<std::size_t> built;  // the lists indexed rather than copied
    for (std::size_t l = 0; l < program.op_lists.size(); ++l) {
        const OpList& list = program.op_lists[l];
        const std::span<const Time> durations = costs.durations[l];
        // A list that indexes like an earlier one takes a copy of its index: GPipe's middle stages
        // are one list but for their layers' labels, and a copy costs far less than indexing.
        // Compared with the last few lists indexed (a copy's original stands for it; a stage's
        // list follows the one it repeats), so that lists alike but for their last ops cost a
        // bounded number of full comparisons each, not one per earlier list.
        constexpr std::size_t kCompared = 4;
        std::size_t same = l;
        for (std::size_t k = built.size(); k > 0 && built.size() - k < kCompared && same == l; --k) {
            const std::size_t j = built[k - 1];
            if (same_index_inputs(list, durations, program.op_lists[j], costs.durations[j])) same = j;
        }
        if (same < l) {
            indexes.push_back(indexes[same]);
        } else {
            indexes.emplace_back(list, durations, merge_chains, classes);
            built.push_back(l);
        }
    }
    return indexes;
}

std::uint32_t OpListIndex::compute_requirement(const StreamSlot& slot) const {
    bool others = false;
    return requirement_on(slot, kComputeStream, others);
}

void OpListIndex::find_lockstep_starts() {
    const auto& chains = streams[kComputeStream];
    for (int x = 0; x < kMaxStreams; ++x) {
        const auto& slots = streams[x];
        lockstep_start[x].assign(slots.size(), false);
        if (x == kComputeStream) continue;
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
