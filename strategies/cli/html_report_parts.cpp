// What the what-if and sweep pages share: the breakdown chart, the Pareto marking, the --html check.
#include <cmath>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"
#include "strategies/cli/html_report.hpp"
#include "strategies/cli/sweep_ranking.hpp"

namespace cuboid::cli {

// The parts of the breakdown (breakdown_parts), the bubble in its two parts (run.hpp, BubbleSplit).
std::vector<std::string> breakdown_part_names() {
    std::vector<std::string> names;
    for (const BreakdownPart& part : breakdown_parts()) {
        if (part.seconds == &Breakdown::bubble_s) {
            names.insert(names.end(), {"bubble: fill and drain", "bubble: stage imbalance"});
        } else {
            names.push_back(part.label);
        }
    }
    return names;
}

std::string breakdown_chart(const std::vector<std::pair<std::string, const RunResult*>>& plans) {
    std::vector<svg::StackedBar> bars;
    for (const auto& [label, x] : plans) {
        std::vector<double> seconds;
        for (const BreakdownPart& part : breakdown_parts()) {
            if (part.seconds == &Breakdown::bubble_s) {
                seconds.insert(seconds.end(), {x->bubble_split.schedule_s, x->bubble_split.stage_imbalance_s});
            } else {
                seconds.push_back(x->breakdown.*part.seconds);
            }
        }
        bars.push_back({label, std::move(seconds), fmt::format("{:.3f} s per iteration", x->iteration_time_s)});
    }
    return svg::stacked_bar_chart(breakdown_part_names(), bars);
}

void mark_pareto_front(std::vector<svg::ScatterPoint>& points) {
    std::vector<ParetoCandidate> candidates;
    for (const auto& p : points) candidates.push_back({p.x, p.y, std::isfinite(p.x) && std::isfinite(p.y)});
    const std::vector<bool> front = pareto_front(candidates);
    for (std::size_t i = 0; i < points.size(); ++i) points[i].on_front = front[i];
}

std::string number_or_dash(const nlohmann::ordered_json& row, const char* pointer, const char* format) {
    const nlohmann::ordered_json::json_pointer p(pointer);
    if (!row.contains(p) || !row.at(p).is_number()) return "-";
    return fmt::format(fmt::runtime(format), row.at(p).get<double>());
}

std::string whole_or_dash(const nlohmann::ordered_json& row, const char* pointer) {
    const nlohmann::ordered_json::json_pointer p(pointer);
    return row.contains(p) && row.at(p).is_number() ? whole_text(row.at(p).get<double>()) : "-";
}

void check_html_path(const std::optional<std::string>& path) {
    if (path && (path->empty() || *path == "-"))
        throw InputError({"", 0, "--html"}, fmt::format("expected a file name for the page, got '{}'", *path));
}

}  // namespace cuboid::cli
