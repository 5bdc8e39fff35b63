// The machine-readable outputs of `cuboid sweep` (docs/scenario.md, "Sweep output"): one
// row per point, in the ranking order, as a JSON array or as CSV with a header row.
// A partial sweep (stopped by a signal, an MPI rank that failed, or a point that failed with an
// internal error) keeps the rows it has and says so where no reader can miss it: the CSV starts
// with a comment line "# partial: K of N points done (WHY)" before its header (pandas:
// read_csv(..., comment="#")), and the JSON is an object {"partial": true, "points_done": K,
// "points_total": N, "reason": WHY, "rows": [...]} instead of the bare array. Points never run
// have no row.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strategies/cli/sweep_runner.hpp"

namespace cuboid::cli {

// Everything a sweep produced, with its ranking.
struct SweepResult {
    std::string name;            // the scenario's name
    std::string source_file;
    SweepAxes axes;
    std::vector<SweepPoint> points;
    std::vector<PointOutcome> outcomes;   // at the point's index
    std::vector<std::size_t> order;       // row order (sweep_order)
    std::vector<bool> pareto;             // at the point's index (sweep_pareto)
    int threads = 1;                      // per rank
    int ranks = 1;                        // MPI ranks that shared the points
    std::size_t clusters = 0;             // distinct hardware models built
    double wall_s = 0.0;
    std::string stopped;                  // why the sweep ended early (signal, failed rank); empty: it did not
    int interrupted_by = 0;               // the signal that stopped it; 0: none

    std::size_t count(PointStatus s) const;
    std::size_t done() const { return outcomes.size() - count(PointStatus::NotRun); }
    // Stopped early, or a point failed with an internal error: the output lacks some results.
    bool partial() const;
    // Why it is partial: the stop and the internal errors, "; "-separated. Empty when complete.
    std::string partial_reason() const;
};

// Outcomes ranked: fills order and pareto.
SweepResult ranked(SweepResult r);

// A swept value with the JSON type of its key (integer, number, boolean, else the text).
nlohmann::ordered_json typed_value(const std::string& key, const std::string& text);

// One row: the swept keys (dotted, typed), `status`, `pareto`, then the `run` fields of a point
// that ran (an invalid or failed point has only `scenario` beside them).
nlohmann::ordered_json sweep_row_json(const SweepResult& r, std::size_t point);

// The rows in ranking order (points not run left out): an array, or the partial object above.
nlohmann::ordered_json sweep_json(const SweepResult& r);

// The CSV columns after the swept keys: status, pareto, then the scalar `run` fields with nested
// ones flattened as "breakdown_s.compute", "sim.events", "plan.data".
std::vector<std::string> sweep_csv_columns();

// RFC 4180: a header row, one row per point in ranking order; fields with commas or quotes quoted;
// the "# partial: ..." line first when partial.
void write_sweep_csv(std::ostream& out, const SweepResult& r);

}  // namespace cuboid::cli
