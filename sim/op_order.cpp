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
    // starts; those from the first whose need on x exceeds i start after o finishes (need on x
    // only grows along a stream). Every op of s is ordered when the second set begins where the
    // first ends, or earlier.
    std::vector<std::uint8_t> ordered(n, 0);
    for (std::uint32_t op = 0; op < n; ++op) {
        if (!is_communication(list.ops[op].kind)) continue;
        const StreamId x = list.ops[op].stream;
        for (int s = 0; s < kStreams; ++s) {
            if (s == x) continue;
            const auto& ops = on_stream[s];
            const auto after = std::partition_point(ops.begin(), ops.end(), [&](std::uint32_t k) {
                return need[k][x] <= position[op];
            });
            if (static_cast<std::uint32_t>(after - ops.begin()) <= need[op][s]) {
                ordered[op] = static_cast<std::uint8_t>(ordered[op] | (1U << s));
            }
        }
    }
    return ordered;
}

}  // namespace cuboid::sim
