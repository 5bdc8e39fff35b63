// The human-readable report of `cuboid run`.
#pragma once

#include <ostream>

#include "strategies/run.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

void write_report(std::ostream& out, const Scenario& s, const RunResult& r);

// "3.2 days", "4.1 h", "12.5 min", "8.3 s"
std::string human_duration(double seconds);

}  // namespace cuboid::cli
