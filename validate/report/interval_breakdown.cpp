#include "validate/report/interval_breakdown.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "strategies/program_streams.hpp"
#include "strategies/run_figures.hpp"

namespace cuboid::validate {
namespace {

// What an op contributes while it runs: compute (0), recompute (1), the communication of class c
// (kFirstClass + c), or nothing (-1). The lowest active counter takes the time, so compute comes
// first and the classes in their order (program_streams.hpp), as the simulator's clock charges.
constexpr int kFirstClass = 2;
constexpr int kParts = kFirstClass + comm_class::kCount;

int part_of(const sim::Op& op) {
    if (sim::is_communication(op.kind)) {
        const int c = sim::comm_class_of(op.category);
        // A communication op of no class is charged as communication, to the first class.
        return kFirstClass + (c >= 0 && c < comm_class::kCount ? c : 0);
    }
    if (op.stream != stream::kCompute) return -1;  // compute off the compute stream
    return op.category == sim::OpCategory::Recompute ? 1 : 0;
}

struct Edge {
    double t;
    int part;
    int delta;
};

}  // namespace

PartTimes interval_breakdown(const sim::OpList& list, const std::vector<Interval>& intervals) {
    if (intervals.size() != list.ops.size()) throw std::logic_error("interval_breakdown: one interval per op");
    std::vector<Edge> edges;
    double finish = 0.0;
    for (std::size_t i = 0; i < intervals.size(); ++i) {
        const Interval& iv = intervals[i];
        finish = std::max(finish, iv.end_s);
        const int p = part_of(list.ops[i]);
        if (p < 0 || !(iv.end_s > iv.start_s)) continue;
        edges.push_back({iv.start_s, p, +1});
        edges.push_back({iv.end_s, p, -1});
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
    std::array<int, kParts> active{};
    std::array<double, kParts + 1> sum{};  // the parts, then the bubble
    double now = 0.0;
    auto charge = [&](double until) {
        if (until <= now) return;
        int to = kParts;  // bubble
        if (active[0] > 0 || active[1] > 0) {
            to = active[1] > 0 && active[0] == 0 ? 1 : 0;
        } else {
            for (int p = kFirstClass; p < kParts; ++p) {
                if (active[static_cast<std::size_t>(p)] > 0) {
                    to = p;
                    break;
                }
            }
        }
        sum[static_cast<std::size_t>(to)] += until - now;
        now = until;
    };
    for (const Edge& e : edges) {
        charge(e.t);
        active[static_cast<std::size_t>(e.part)] += e.delta;
    }
    charge(finish);
    PartTimes out;
    out.compute_s = sum[0];
    out.recompute_s = sum[1];
    for (int c = 0; c < comm_class::kCount; ++c) {
        out.*exposed_part(sim::comm_category(c)) = sum[static_cast<std::size_t>(kFirstClass + c)];
    }
    out.bubble_s = sum[kParts];
    return out;
}

}  // namespace cuboid::validate
