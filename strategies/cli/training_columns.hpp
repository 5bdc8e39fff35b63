// Days, cost and energy to train as columns of a plan table (`cuboid search`), from the figures
// run_scenario already computed for each plan (RunResult::time_to_train_s, cost_usd, energy_kwh:
// strategies/run_figures.cpp, the same as `cuboid run` reports). A column is shown only when
// some row has its figure, i.e. when the scenario gives training.tokens (and the cost keys).
#pragma once

#include <span>
#include <string>

#include "strategies/run.hpp"

namespace cuboid::cli {

class TrainingColumns {
public:
    explicit TrainingColumns(std::span<const RunResult* const> rows);

    bool any() const { return days_ || cost_ || energy_; }
    // "  days  w/ failures  cost USD  energy MWh" (the columns shown), or "".
    std::string header() const;
    // The row's cells under header(); "-" where the row lacks a figure.
    std::string cells(const RunResult& r) const;
    // One line saying where the figures come from, or "" when no column is shown.
    std::string legend() const;

private:
    bool days_ = false;
    bool cost_ = false;
    bool energy_ = false;
};

}  // namespace cuboid::cli
