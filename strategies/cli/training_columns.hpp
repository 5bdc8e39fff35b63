// Days, cost (typed, rented, owned) and energy to train as columns of a plan table (`cuboid search`), from the figures
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

    bool any() const { return days_ || cost_ || energy_ || rented_ || owned_; }
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
    bool rented_ = false;  // the cost rented and owned (RunResult::training_cost)
    bool owned_ = false;
    std::string cost_inputs_;  // the cost inputs and their sources (one cluster: the same for every row)
};

}  // namespace cuboid::cli
