// What `cuboid search` reports: the counts of the search (candidates, pruned by memory and by
// bound, simulated), its time, and the top plans with their breakdown, as a table and as JSON
// (docs/search.md); the CSV is the sweep's, over the simulated plans.
#pragma once

#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "strategies/cli/search_run.hpp"

namespace cuboid::cli {

// "1200 candidates: 400 invalid, 500 pruned by memory, 290 pruned by bound, 10 simulated".
std::string search_summary(const SearchResult& r);

// The plan of a simulated point in words: "t8 p4 d16 mb1 interleaved(v2) selective 1d sp zero1".
std::string plan_text(const SweepResult& plans, std::size_t point);

void write_search_table(std::ostream& out, const SearchResult& r, int top);

// {"search": {counts, times}, "plans": [the top plans' sweep rows with "bound_s"]}.
nlohmann::ordered_json search_json(const SearchResult& r, int top);

// The point index of the fastest plan that fits, if any.
std::optional<std::size_t> best_plan(const SearchResult& r);

}  // namespace cuboid::cli
