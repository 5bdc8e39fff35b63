// Transitive stream requirements of op_order.hpp.
#include "sim/op_order.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <span>

namespace cuboid::sim {
namespace {

// need(o) has an entry per stream, but a list uses its first `stream_count` streams only (five in
// a 3D-parallel plan): the walk keeps rows of the narrowest width W of 4, 8 and 16 that holds them,
// since it reads and writes a row per op (a plan of a 1,024-GPU sweep point has a million ops, and
// 16-wide rows were 64 MB for them).
template <int W>
using Counts = std::array<std::uint32_t, W>;

// First index k in [after, size) with seen[k][x] > i (size if none); seen[.][x] does not decrease.
// Galloping from `after`: the comm ops of stream x are sparse among the ops of another stream
// (a data-parallel reduction every few thousand ops), so a linear sweep would read every op of
// that stream for each x, while the gallop reads a logarithm of each gap.
template <int W>
std::uint32_t first_above(std::span<const Counts<W>> seen, int x, std::uint32_t i, std::uint32_t after) {
    const auto size = static_cast<std::uint32_t>(seen.size());
    if (after >= size || seen[after][x] > i) return after;
    std::uint32_t lo = after;  // seen[lo][x] <= i
    std::uint32_t step = 1;
    while (step < size - lo && seen[lo + step][x] <= i) {
        lo += step;
        step *= 2;
    }
    std::uint32_t hi = step < size - lo ? lo + step : size;  // size, or seen[hi][x] > i
    while (hi - lo > 1) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        (seen[mid][x] <= i ? lo : hi) = mid;
    }
    return hi;
}

// seen(o) is need(o) with o's own stream counting o itself (position + 1): merging a dependency
// is then an element-wise max, and need(o)[s] = seen(o)[s] for every other stream s, which is all
// that ordered_streams reads. Stored stream by stream, each stream's ops in order after a zero
// entry (the op before its first): stream s holds [begin[s], end[s]), its zero at begin[s] - 1, so
// that a stream's ops are contiguous and op o (stream s, position p) is at begin[s] + p.
template <int W>
struct Needs {
    std::array<std::uint32_t, kMaxStreams> begin{};
    std::array<std::uint32_t, kMaxStreams> end{};
    std::unique_ptr<Counts<W>[]> seen;
    std::array<std::vector<std::uint32_t>, kMaxStreams> comm;  // the communication ops of each stream

    std::span<const Counts<W>> stream(int s) const { return {seen.get() + begin[s], seen.get() + end[s]}; }
};

// From the index rather than the op list: its 32-byte slots and per-op stream and position are
// what the walk needs, where the list's ops are 64 bytes each and keep their dependencies apart.
// seen(o) is the max of seen of the op before o on its stream and of seen of the op each of o's
// requirements names (the last op of that stream o depends on: seen grows along a stream, so it
// covers o's other dependencies there).
template <int W>
Needs<W> needs(const OpListIndex& index) {
    const auto n = static_cast<std::uint32_t>(index.position.size());
    Needs<W> r;
    for (std::uint32_t s = 0, from = 0; s < kMaxStreams; from = r.end[s++]) {
        r.begin[s] = from + 1;
        r.end[s] = r.begin[s] + static_cast<std::uint32_t>(index.streams[s].size());
    }
    r.seen = std::make_unique_for_overwrite<Counts<W>[]>(r.end[kMaxStreams - 1]);
    Counts<W>* const seen = r.seen.get();
    for (int s = 0; s < kMaxStreams; ++s) seen[r.begin[s] - 1] = Counts<W>{};
    const Requirement* const reqs = index.requirements.data();
    for (std::uint32_t op = 0; op < n; ++op) {
        const StreamId s = index.stream_of[op];
        const std::uint32_t p = index.position[op];
        const std::uint32_t at = r.begin[s] + p;
        Counts<W>& c = seen[at];
        c = seen[at - 1];  // the op before it on its stream, or zero
        const StreamSlot& slot = index.streams[s][p];
        for (std::uint32_t i = slot.req_begin; i < slot.req_end(); ++i) {
            const Counts<W>& f = seen[r.begin[reqs[i].stream] + reqs[i].count - 1];
            for (int k = 0; k < W; ++k) c[k] = std::max(c[k], f[k]);
        }
        c[s] = p + 1;  // need(o)[s] is at most its position: ops before it on s only
    }
    for (int s = 0; s < kMaxStreams; ++s) {
        if ((index.comm_streams >> s & 1U) == 0) continue;
        for (const StreamSlot& slot : index.streams[s])
            if (slot.is_comm) r.comm[s].push_back(slot.op);
    }
    return r;
}

template <int W>
std::vector<StreamMask> ordered_streams_of_width(const OpListIndex& index) {
    const Needs<W> need = needs<W>(index);
    // Op o (stream x, position i) and stream s: the ops of s before need(o)[s] finish before o
    // starts; those from the first whose need on x exceeds i start after o finishes. Every op of
    // s is ordered when the second set begins where the first ends, or earlier. Need on x only
    // grows along stream s (each op merges its predecessor's), and i grows along stream x, so
    // that first op only moves forward: one forward (galloping) search of s per pair of streams
    // finds it for every communication op of x, instead of a binary search of all of s per op.
    std::vector<StreamMask> ordered(index.position.size(), 0);
    for (int x = 0; x < kMaxStreams; ++x) {
        const auto& comm = need.comm[x];
        if (comm.empty()) continue;
        // A stream without ops is ordered with everything.
        StreamMask vacuous = 0;
        for (int s = 0; s < kMaxStreams; ++s) {
            if (s != x && need.stream(s).empty()) vacuous = static_cast<StreamMask>(vacuous | (1U << s));
        }
        for (const std::uint32_t op : comm) ordered[op] = vacuous;
        for (int s = 0; s < kMaxStreams; ++s) {
            if (s == x || need.stream(s).empty()) continue;
            const auto bit = static_cast<StreamMask>(1U << s);
            std::uint32_t after = 0;
            for (const std::uint32_t op : comm) {
                const std::uint32_t at = need.begin[x] + index.position[op];
                after = first_above<W>(need.stream(s), x, index.position[op], after);
                if (after <= need.seen[at][s]) ordered[op] = static_cast<StreamMask>(ordered[op] | bit);
            }
        }
    }
    return ordered;
}

}  // namespace

std::vector<StreamMask> ordered_streams(const OpListIndex& index) {
    // Streams at or past stream_count hold no ops: their entries of need would stay zero.
    if (index.stream_count <= 4) return ordered_streams_of_width<4>(index);
    if (index.stream_count <= 8) return ordered_streams_of_width<8>(index);
    return ordered_streams_of_width<kMaxStreams>(index);
}

std::vector<StreamMask> ordered_streams(const OpList& list) {
    // Durations do not matter here, nor do chains or classes: only the requirements are read.
    const std::vector<Time> durations(list.ops.size(), Time(0));
    return ordered_streams(OpListIndex(list, durations, false, CommClassRules{kMaxCommClasses, 0}));
}

bool same_order_inputs(const OpList& a, const OpList& b) {
    // The dependencies first: one wide compare, and they tell most lists apart.
    if (a.ops.size() != b.ops.size() || a.deps != b.deps) return false;
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        const Op& x = a.ops[i];
        const Op& y = b.ops[i];
        if (x.stream != y.stream || is_communication(x.kind) != is_communication(y.kind) ||
            x.first_dep != y.first_dep || x.dep_count != y.dep_count)
            return false;
    }
    return true;
}

}  // namespace cuboid::sim
