#include "strategies/cli/sweep_table.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace cuboid::cli {
namespace {

// The last part of each swept key ("micro_batch"), or the whole key where two would read alike.
std::vector<std::string> column_titles(const SweepAxes& axes) {
    std::vector<std::string> titles;
    for (const auto& [key, values] : axes) titles.push_back(key.substr(key.rfind('.') + 1));
    for (std::size_t a = 0; a < axes.size(); ++a)
        if (std::count(titles.begin(), titles.end(), titles[a]) > 1) titles[a] = axes[a].first;
    return titles;
}

std::vector<std::size_t> key_widths(const SweepResult& r, const std::vector<std::string>& titles) {
    std::vector<std::size_t> w;
    for (std::size_t a = 0; a < r.axes.size(); ++a) {
        std::size_t width = titles[a].size();
        for (const auto& v : r.axes[a].second) width = std::max(width, v.size());
        w.push_back(width);
    }
    return w;
}

void write_row(std::ostream& out, const SweepResult& r, std::size_t i, const std::string& rank,
               const std::vector<std::size_t>& widths) {
    fmt::print(out, "{:>5}", rank);
    for (std::size_t a = 0; a < r.axes.size(); ++a) fmt::print(out, "  {:>{}}", r.points[i][a], widths[a]);
    const PointOutcome& o = r.outcomes[i];
    if (o.result) {
        const RunResult& x = *o.result;
        fmt::print(out, "  {:>11.4f}  {:>10.4g}  {:>6.1f}  {:>8.1f}  {:>6}", x.iteration_time_s, x.tokens_per_s,
                   100.0 * x.mfu, x.peak_memory_bytes / 1e9, r.pareto[i] ? "*" : "");
    } else {
        fmt::print(out, "  {:>11}  {:>10}  {:>6}  {:>8}  {:>6}", "-", "-", "-", "-", "");
    }
    fmt::print(out, "  {}\n", status_text(o));
}

}  // namespace

std::string sweep_summary(const SweepResult& r) {
    std::string s = fmt::format("{} points: {} ok, {} oom, {} invalid", r.outcomes.size(), r.count(PointStatus::Ok),
                                r.count(PointStatus::OutOfMemory), r.count(PointStatus::Invalid));
    if (const auto errors = r.count(PointStatus::Error)) s += fmt::format(", {} error", errors);
    if (const auto skipped = r.count(PointStatus::NotRun)) s += fmt::format(", {} not run", skipped);
    return s;
}

void write_sweep_table(std::ostream& out, const SweepResult& r, std::optional<int> top) {
    std::vector<std::string> axis_names;
    for (const auto& axis : r.axes) axis_names.push_back(axis.first);
    fmt::print(out, "sweep     {} ({})\n", r.name, r.source_file);
    fmt::print(out, "axes      {}\n", fmt::join(axis_names, " x "));
    const std::string workers =
        r.ranks > 1 ? fmt::format("{} ranks x {} threads", r.ranks, r.threads) : fmt::format("{} threads", r.threads);
    fmt::print(out, "ran       {} points on {}, {} cluster model{}, {:.2f} s wall ({:.1f} points/s)\n\n", r.done(),
               workers, r.clusters, r.clusters == 1 ? "" : "s", r.wall_s, r.wall_s > 0 ? r.done() / r.wall_s : 0.0);

    const auto titles = column_titles(r.axes);
    const auto widths = key_widths(r, titles);
    fmt::print(out, "{:>5}", "rank");
    for (std::size_t a = 0; a < titles.size(); ++a) fmt::print(out, "  {:>{}}", titles[a], widths[a]);
    fmt::print(out, "  {:>11}  {:>10}  {:>6}  {:>8}  {:>6}  {}\n", "iteration_s", "tokens/s", "MFU %", "peak GB",
               "pareto", "status");

    std::size_t shown_ok = 0;
    for (const std::size_t i : r.order) {
        if (r.outcomes[i].status == PointStatus::NotRun) continue;
        const bool ok = r.outcomes[i].status == PointStatus::Ok;
        if (top && (!ok || shown_ok >= static_cast<std::size_t>(*top))) continue;
        write_row(out, r, i, ok ? std::to_string(++shown_ok) : "-", widths);
    }
    fmt::print(out, "\n{}", sweep_summary(r));
    if (top) fmt::print(out, " (showing the {} fastest ok)", shown_ok);
    if (r.partial()) fmt::print(out, "\npartial: {} of {} points done ({})", r.done(), r.outcomes.size(), r.partial_reason());
    fmt::print(out, "\npareto *: no other ok point is as fast with as little peak memory (and better in one)\n");
}

}  // namespace cuboid::cli
