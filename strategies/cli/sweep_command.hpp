// `cuboid sweep`: every point of the scenario's `sweep:` axes (their cartesian product) run as a
// scenario of its own, on several threads, ranked by iteration time, with the Pareto front of
// time against peak memory marked; a table on standard output, CSV and JSON on request.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "strategies/work_limits.hpp"

namespace cuboid::cli {

struct SweepRequest {
    std::string scenario_path;
    std::vector<std::string> sets;     // KEY=VALUE applied to the base before the sweep
    std::optional<int> threads;        // default: the hardware threads of the machine
    WorkLimits limits;                 // --max-events, --max-memory, per point
    std::optional<std::string> csv;    // file, or "-" for standard output only
    std::optional<std::string> json;   // file, or "-" for standard output only
    std::optional<std::string> html;   // the shareable page (html_report.hpp): a file
    std::optional<int> top;            // table: only the N fastest ok points
    bool quiet = false;                // no table, no progress
    bool progress = false;             // progress line on `err` (the caller knows if it is a terminal)
    bool fold = true;                  // false (--no-fold): simulate every rank of every point
    double memory_headroom = 0.0;      // --memory-headroom: the fraction of GPU memory left free
};

// Throws InputError for bad input (before any point runs). Returns 0 when at least one point
// ran and fits; otherwise, with every output still written: 3 when points ran but none fits,
// 2 when every point is an invalid plan; 1 (after the outputs) when a point failed with an
// internal error.
int sweep_command(const SweepRequest& request, std::ostream& out, std::ostream& err);

}  // namespace cuboid::cli
