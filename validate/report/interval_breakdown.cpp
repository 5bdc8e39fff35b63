#include "validate/report/interval_breakdown.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace cuboid::validate {
namespace {

// What an op contributes while it runs: one of the counters below.
enum class Part { Compute, Recompute, Tensor, Pipeline, Data, None };

Part part_of(const sim::Op& op) {
    if (sim::is_communication(op.kind)) {
        switch (op.category) {
            case sim::OpCategory::TensorComm: return Part::Tensor;
            case sim::OpCategory::PipelineComm: return Part::Pipeline;
            case sim::OpCategory::DataComm: return Part::Data;
            default: return Part::Tensor;  // a communication op is charged as communication
        }
    }
    if (op.stream != sim::stream::kCompute) return Part::None;  // compute off the compute stream
    return op.category == sim::OpCategory::Recompute ? Part::Recompute : Part::Compute;
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
        const Part p = part_of(list.ops[i]);
        if (p == Part::None || !(iv.end_s > iv.start_s)) continue;
        edges.push_back({iv.start_s, int(p), +1});
        edges.push_back({iv.end_s, int(p), -1});
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
    std::array<int, 5> active{};
    std::array<double, 6> sum{};  // compute, recompute, tensor, pipeline, data, bubble
    double now = 0.0;
    auto charge = [&](double until) {
        if (until <= now) return;
        int to = 5;  // bubble
        if (active[0] > 0 || active[1] > 0) to = active[1] > 0 && active[0] == 0 ? 1 : 0;
        else if (active[2] > 0) to = 2;
        else if (active[3] > 0) to = 3;
        else if (active[4] > 0) to = 4;
        sum[std::size_t(to)] += until - now;
        now = until;
    };
    for (const Edge& e : edges) {
        charge(e.t);
        active[std::size_t(e.part)] += e.delta;
    }
    charge(finish);
    return {sum[0], sum[1], sum[2], sum[3], sum[4], sum[5]};
}

}  // namespace cuboid::validate
