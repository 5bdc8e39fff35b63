// Simulating the rows of a published set: each row is its scenario file with `--set` overrides,
// predicted with run_scenario, rows in parallel.
#pragma once

#include <string>
#include <vector>

#include "validate/published/published_check.hpp"

namespace cuboid::validate {

// One row to predict: the row (measured time filled in), its scenario file and overrides.
struct RowJob {
    CheckRow row;
    std::string scenario_path;
    std::vector<std::string> sets;
};

// Predicts every job on `options.threads` threads (rows are independent simulations); results
// keep the jobs' order, so the output does not depend on the thread count. A row that cannot be
// simulated keeps its job's row with `failure` set to why.
std::vector<CheckRow> simulate_rows(const std::vector<RowJob>& jobs, const CheckOptions& options);

}  // namespace cuboid::validate
