#include "strategies/cli/sweep_ranking.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace cuboid::cli {

std::vector<bool> pareto_front(std::span<const ParetoCandidate> c) {
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < c.size(); ++i)
        if (c[i].eligible) idx.push_back(i);
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        return c[a].time_s != c[b].time_s ? c[a].time_s < c[b].time_s : c[a].memory_bytes < c[b].memory_bytes;
    });
    std::vector<bool> on(c.size(), false);
    // Walk groups of equal time, fastest first. In a group only the least memory can be on the
    // front (it dominates the others), and only if every strictly faster point needs more.
    double least_faster = std::numeric_limits<double>::infinity();
    for (std::size_t g = 0; g < idx.size();) {
        std::size_t end = g;
        while (end < idx.size() && c[idx[end]].time_s == c[idx[g]].time_s) ++end;
        const double least_here = c[idx[g]].memory_bytes;  // sorted by memory within the group
        for (std::size_t k = g; k < end; ++k)
            on[idx[k]] = c[idx[k]].memory_bytes == least_here && least_here < least_faster;
        least_faster = std::min(least_faster, least_here);
        g = end;
    }
    return on;
}

std::vector<std::size_t> sweep_order(const std::vector<PointOutcome>& outcomes) {
    std::vector<std::size_t> order(outcomes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto time_of = [&](std::size_t i) {
        return outcomes[i].result ? outcomes[i].result->iteration_time_s : 0.0;
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto ga = static_cast<int>(outcomes[a].status), gb = static_cast<int>(outcomes[b].status);
        if (ga != gb) return ga < gb;  // Ok, OutOfMemory, Invalid, Error
        return time_of(a) < time_of(b);
    });
    return order;
}

std::vector<bool> sweep_pareto(const std::vector<PointOutcome>& outcomes) {
    std::vector<ParetoCandidate> c;
    c.reserve(outcomes.size());
    for (const auto& o : outcomes)
        c.push_back(o.result && o.status == PointStatus::Ok
                        ? ParetoCandidate{o.result->iteration_time_s, o.result->peak_memory_bytes, true}
                        : ParetoCandidate{});
    return pareto_front(c);
}

}  // namespace cuboid::cli
