// From what every rank measured to the figures of the comparison (plain C++, so it is tested
// without a GPU).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/program.hpp"
#include "validate/report/figures.hpp"
#include "validate/report/interval_breakdown.hpp"

namespace cuboid::validate {

struct RankMeasurement {
    std::uint32_t rank = 0;
    std::string device;
    std::vector<double> iteration_s;  // every timed iteration of this rank
    std::vector<Interval> ops;        // per op of its OpList: median start and end over the profiled
                                      // iterations, seconds from the iteration's start
    double peak_memory_bytes = 0.0;
    std::vector<std::string> notes;
};

nlohmann::json to_json(const RankMeasurement& r);
RankMeasurement rank_measurement_from_json(const nlohmann::json& j);

// Iteration i of the job lasts as long as its slowest rank (they start together); the figure is
// the median over iterations. Per-kind times are means over ranks; the breakdown is that of the
// rank whose profiled iteration ends last; per-op times are kept for compute ops.
Figures aggregate(const sim::Program& program, const std::vector<RankMeasurement>& ranks);

}  // namespace cuboid::validate
