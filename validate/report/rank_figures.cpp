#include "validate/report/rank_figures.hpp"

#include <algorithm>
#include <stdexcept>

#include "validate/plan/plan_summary.hpp"

namespace cuboid::validate {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double finish(const std::vector<Interval>& ops) {
    double f = 0.0;
    for (const Interval& i : ops) f = std::max(f, i.end_s);
    return f;
}

}  // namespace

nlohmann::json to_json(const RankMeasurement& r) {
    nlohmann::json ops = nlohmann::json::array();
    for (const Interval& i : r.ops) ops.push_back({i.start_s, i.end_s});
    return {{"rank", r.rank},     {"device", r.device}, {"iteration_s", r.iteration_s},
            {"ops", ops},         {"peak_memory_bytes", r.peak_memory_bytes}, {"notes", r.notes}};
}

RankMeasurement rank_measurement_from_json(const nlohmann::json& j) {
    RankMeasurement r;
    r.rank = j.at("rank").get<std::uint32_t>();
    r.device = j.at("device").get<std::string>();
    r.iteration_s = j.at("iteration_s").get<std::vector<double>>();
    for (const auto& o : j.at("ops")) r.ops.push_back({o.at(0).get<double>(), o.at(1).get<double>()});
    r.peak_memory_bytes = j.at("peak_memory_bytes").get<double>();
    r.notes = j.at("notes").get<std::vector<std::string>>();
    return r;
}

Figures aggregate(const sim::Program& program, const std::vector<RankMeasurement>& ranks) {
    if (ranks.empty()) throw std::logic_error("aggregate: no rank measured");
    Figures f;
    f.device = ranks.front().device;
    f.gpus = static_cast<int>(ranks.size());
    const std::size_t iterations = ranks.front().iteration_s.size();
    for (std::size_t i = 0; i < iterations; ++i) {
        double slowest = 0.0;
        for (const RankMeasurement& r : ranks) slowest = std::max(slowest, r.iteration_s.at(i));
        f.iteration_times_s.push_back(slowest);
    }
    f.iteration_time_s = median(f.iteration_times_s);
    const RankMeasurement* last = &ranks.front();
    for (const RankMeasurement& r : ranks) {
        f.peak_memory_bytes = std::max(f.peak_memory_bytes, r.peak_memory_bytes);
        if (finish(r.ops) > finish(last->ops)) last = &r;
        const auto& ops = program.op_lists[program.ranks.at(r.rank).op_list].ops;
        if (r.ops.size() != ops.size()) throw std::logic_error("aggregate: one interval per op of the rank's list");
        for (std::uint32_t i = 0; i < ops.size(); ++i) {
            const double s = std::max(0.0, r.ops[i].end_s - r.ops[i].start_s);
            f.op_kind_seconds[op_kind_name(ops[i].kind)] += s / double(ranks.size());
            if (!sim::is_communication(ops[i].kind)) f.ops.push_back({r.rank, i, s});
        }
        for (const std::string& n : r.notes) f.notes.push_back("rank " + std::to_string(r.rank) + ": " + n);
    }
    f.breakdown = interval_breakdown(program.op_lists[program.ranks.at(last->rank).op_list], last->ops);
    return f;
}

}  // namespace cuboid::validate
