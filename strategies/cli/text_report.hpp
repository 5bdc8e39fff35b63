// The human-readable report of `cuboid run`.
#pragma once

#include <ostream>

#include "strategies/cli/fitting_changes.hpp"
#include "strategies/run.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

void write_report(std::ostream& out, const Scenario& s, const RunResult& r);

// The changes that would make an out-of-memory plan fit (fitting_changes.hpp), one a line.
void write_fitting_changes(std::ostream& out, const std::vector<FittingChange>& changes);

// For the one-line out-of-memory notice: "; fits with --set A=B (peak X GB, iteration Y s)" for the
// fastest change, or "; no single change fits" (with the kinds tried).
std::string fitting_changes_summary(const std::vector<FittingChange>& changes);

// "3.2 days", "4.1 h", "12.5 min", "8.3 s"
std::string human_duration(double seconds);

// "32 heads (4 kv)", with each head's size when it is not hidden / heads: "32 heads of 128 (4 kv)".
std::string heads_text(const ModelSpec& m);

}  // namespace cuboid::cli
