// The shareable report of `cuboid whatif`, `cuboid sweep` and `cuboid search` (--html FILE):
// one self-contained HTML page (html_page.hpp) with the inputs, the ranking, charts drawn by
// cuboid (svg_chart.hpp) and each winner's iteration-time breakdown. It shows the figures the
// JSON output holds, nothing computed anew. A partial study or sweep says so at the top.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strategies/cli/svg_chart.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "strategies/cli/whatif_run.hpp"
#include "strategies/cli/whatif_study.hpp"

namespace cuboid::cli {

// Inputs (study file, PUE, clusters, models, search space), then per model: the clusters ranked
// by time to train; bars of time, cost (rented, owned) and energy per cluster; time against
// rented cost with the Pareto front; the winners' breakdowns; last, every cost's inputs and sources.
std::string whatif_html(const WhatifResult& r, const Study& study);

struct SweepPageText {
    std::string command;  // "sweep" or "search"
    std::string summary;  // the counts line ("48 points: 20 ok, ...")
    // A point in words, for the table and the charts; empty: its swept keys ("tensor=8 pipeline=2").
    std::function<std::string(const SweepResult&, std::size_t)> label;
};

// Inputs (file, axes, the cluster and model of the fastest plan), the ranked rows (the first
// kMaxHtmlRows), the fastest plans' iteration times, iteration time against peak memory with the
// sweep's Pareto front, time to train against cost with its front where the rows have a cost,
// and the fastest plans' breakdowns.
std::string sweep_html(const SweepResult& r, const SweepPageText& text);

inline constexpr std::size_t kMaxHtmlRows = 100;

// --html: absent, or a file name (a page is for a browser, not for standard output), else
// InputError naming the option.
void check_html_path(const std::optional<std::string>& path);

// Shared by both pages.
// The iteration-time breakdown's parts (the bubble in its schedule and stage-imbalance parts).
std::vector<std::string> breakdown_part_names();
// One stacked bar per (label, result): the parts of breakdown_part_names in seconds.
std::string breakdown_chart(const std::vector<std::pair<std::string, const RunResult*>>& plans);
// Marks each point on the front of (x, y), both minimised (sweep_ranking's pareto_front).
void mark_pareto_front(std::vector<svg::ScatterPoint>& points);
// The number at a JSON pointer of a row ("/training_cost/owned_usd") in `format`, or "-" where the
// row has none (a figure not known is null).
std::string number_or_dash(const nlohmann::ordered_json& row, const char* pointer, const char* format);
// The same as a whole number with thousands separators.
std::string whole_or_dash(const nlohmann::ordered_json& row, const char* pointer);
// Whole numbers with thousands separators ("1,234,567"), as the charts write them.
using svg::whole_text;

}  // namespace cuboid::cli
