// Transitive stream requirements of op_order.hpp.
#include "sim/op_order.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

namespace cuboid::sim {
namespace {

constexpr int kStreams = 8;
using Counts = std::array<std::uint32_t, kStreams>;

// First index k in [after, size) with seen[k][x] > i (size if none); seen[.][x] does not decrease.
// Galloping from `after`: the comm ops of stream x are sparse among the ops of another stream
// (a data-parallel reduction every few thousand ops), so a linear sweep would read every op of
// that stream for each x, while the gallop reads a logarithm of each gap.
std::uint32_t first_above(std::span<const Counts> seen, int x, std::uint32_t i, std::uint32_t after) {
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
// that a stream's ops are contiguous.
struct Needs {
    std::array<std::uint32_t, kStreams> begin{};
    std::array<std::uint32_t, kStreams> end{};
    std::unique_ptr<Counts[]> seen;
    std::unique_ptr<std::uint32_t[]> at;                     // op -> its index in seen
    std::array<std::vector<std::uint32_t>, kStreams> comm;  // the communication ops of each stream

    std::span<const Counts> stream(int s) const { return {seen.get() + begin[s], seen.get() + end[s]}; }
};

[[noreturn]] void bad_stream(StreamId s) {
    throw std::logic_error("op list: stream id " + std::to_string(s) + " out of range");
}
[[noreturn]] void bad_dependency(std::uint32_t op, std::uint32_t d) {
    throw std::logic_error("op list: op " + std::to_string(op) + " depends on later op " + std::to_string(d));
}

Needs needs(const OpList& list) {
    const auto n = static_cast<std::uint32_t>(list.ops.size());
    const Op* const ops = list.ops.data();
    // Ops per stream id, every id counted (ids of 8 or more throw below, in op order).
    std::array<std::uint32_t, std::size_t{std::numeric_limits<StreamId>::max()} + 1> count{};
    for (std::uint32_t op = 0; op < n; ++op) ++count[ops[op].stream];
    Needs r;
    for (std::uint32_t s = 0, from = 0; s < kStreams; from = r.end[s++]) {
        r.begin[s] = from + 1;
        r.end[s] = r.begin[s] + count[s];
    }
    r.seen = std::make_unique_for_overwrite<Counts[]>(r.end[kStreams - 1]);
    r.at = std::make_unique_for_overwrite<std::uint32_t[]>(n);
    Counts* const seen = r.seen.get();
    std::uint32_t* const at = r.at.get();
    for (int s = 0; s < kStreams; ++s) seen[r.begin[s] - 1] = Counts{};
    std::array<std::uint32_t, kStreams> next = r.begin;  // where the next op of each stream goes
    const std::uint32_t* const deps = list.deps.data();
    for (std::uint32_t op = 0; op < n; ++op) {
        const Op& o = ops[op];
        const StreamId s = o.stream;
        if (s >= kStreams) bad_stream(s);
        const std::uint32_t slot = next[s]++;
        Counts& c = seen[slot];
        c = seen[slot - 1];  // the op before it on its stream, or zero
        for (std::uint32_t i = o.first_dep; i < o.first_dep + o.dep_count; ++i) {
            const std::uint32_t d = deps[i];
            if (d >= op) bad_dependency(op, d);
            const Counts& f = seen[at[d]];
            for (int k = 0; k < kStreams; ++k) c[k] = std::max(c[k], f[k]);
        }
        c[s] = slot - r.begin[s] + 1;  // need(o)[s] is at most its position: ops before it on s only
        at[op] = slot;
        if (is_communication(o.kind)) r.comm[s].push_back(op);
    }
    return r;
}

}  // namespace

std::vector<std::uint8_t> ordered_streams(const OpList& list) {
    const Needs need = needs(list);
    // Op o (stream x, position i) and stream s: the ops of s before need(o)[s] finish before o
    // starts; those from the first whose need on x exceeds i start after o finishes. Every op of
    // s is ordered when the second set begins where the first ends, or earlier. Need on x only
    // grows along stream s (each op merges its predecessor's), and i grows along stream x, so
    // that first op only moves forward: one forward (galloping) search of s per pair of streams
    // finds it for every communication op of x, instead of a binary search of all of s per op.
    std::vector<std::uint8_t> ordered(list.ops.size(), 0);
    for (int x = 0; x < kStreams; ++x) {
        const auto& comm = need.comm[x];
        if (comm.empty()) continue;
        // A stream without ops is ordered with everything.
        std::uint8_t vacuous = 0;
        for (int s = 0; s < kStreams; ++s) {
            if (s != x && need.stream(s).empty()) vacuous = static_cast<std::uint8_t>(vacuous | (1U << s));
        }
        for (const std::uint32_t op : comm) ordered[op] = vacuous;
        for (int s = 0; s < kStreams; ++s) {
            if (s == x || need.stream(s).empty()) continue;
            const auto bit = static_cast<std::uint8_t>(1U << s);
            std::uint32_t after = 0;
            for (const std::uint32_t op : comm) {
                const std::uint32_t at = need.at[op];
                after = first_above(need.stream(s), x, at - need.begin[x], after);
                if (after <= need.seen[at][s]) ordered[op] = static_cast<std::uint8_t>(ordered[op] | bit);
            }
        }
    }
    return ordered;
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
