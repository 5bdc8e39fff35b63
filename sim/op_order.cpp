// Transitive stream requirements of op_order.hpp.
#include "sim/op_order.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace cuboid::sim {

std::vector<std::uint8_t> ordered_streams(const OpList& list) {
    constexpr int kStreams = 8;
    using Counts = std::array<std::uint32_t, kStreams>;
    const auto n = static_cast<std::uint32_t>(list.ops.size());
    std::vector<Counts> need(n);
    std::vector<std::uint32_t> position(n);
    std::array<std::vector<std::uint32_t>, kStreams> on_stream;  // ops of each stream, in order
    const auto merge = [&](Counts& into, std::uint32_t from) {
        const Counts& f = need[from];
        for (int s = 0; s < kStreams; ++s) into[s] = std::max(into[s], f[s]);
        const StreamId fs = list.ops[from].stream;
        into[fs] = std::max(into[fs], position[from] + 1);
    };
    for (std::uint32_t op = 0; op < n; ++op) {
        const StreamId s = list.ops[op].stream;
        if (s >= kStreams) throw std::logic_error("op list: stream id " + std::to_string(s) + " out of range");
        Counts c{};
        if (!on_stream[s].empty()) merge(c, on_stream[s].back());
        const Op& o = list.ops[op];
        for (std::uint32_t i = o.first_dep; i < o.first_dep + o.dep_count; ++i) {
            const std::uint32_t d = list.deps[i];
            if (d >= op) throw std::logic_error("op list: op " + std::to_string(op) + " depends on later op " + std::to_string(d));
            merge(c, d);
        }
        need[op] = c;
        position[op] = static_cast<std::uint32_t>(on_stream[s].size());
        on_stream[s].push_back(op);
    }
    // Op o (stream x, position i) and stream s: the ops of s before need(o)[s] finish before o
    // starts; those from the first whose need on x exceeds i start after o finishes. Every op of
    // s is ordered when the second set begins where the first ends, or earlier. Need on x only
    // grows along stream s (each op merges its predecessor's), and i grows along stream x, so
    // that first op only moves forward: one sweep of s per pair of streams finds it for every
    // communication op of x, instead of a binary search per op.
    std::vector<std::uint8_t> ordered(n, 0);
    std::vector<std::uint32_t> comm;  // positions of the communication ops of stream x
    for (int x = 0; x < kStreams; ++x) {
        const auto& xs = on_stream[x];
        comm.clear();
        for (std::uint32_t i = 0; i < xs.size(); ++i) {
            if (is_communication(list.ops[xs[i]].kind)) comm.push_back(i);
        }
        for (int s = 0; s < kStreams && !comm.empty(); ++s) {
            if (s == x) continue;
            const auto& ops = on_stream[s];
            std::uint32_t after = 0;
            for (const std::uint32_t i : comm) {
                while (after < ops.size() && need[ops[after]][x] <= i) ++after;
                const std::uint32_t op = xs[i];
                if (after <= need[op][s]) ordered[op] = static_cast<std::uint8_t>(ordered[op] | (1U << s));
            }
        }
    }
    return ordered;
}

}  // namespace cuboid::sim
