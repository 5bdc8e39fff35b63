// Predicted against measured: one row per figure with its relative error, and a verdict.
//
// Relative error = (predicted - measured) / measured: +5 % means the simulator predicted 5 % too
// much. A row whose measured value is 0 has no relative error.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/report/figures.hpp"

namespace cuboid::validate {

struct Row {
    std::string metric;  // "iteration time", "throughput", "time gemm", ...
    std::string unit;    // "s", "tokens/s", "bytes"
    double predicted = 0.0;
    double measured = 0.0;
    std::optional<double> error;  // relative
};

enum class Verdict { Within5, Within10, Off };

struct Comparison {
    std::vector<Row> rows;
    std::optional<double> median_op_error;  // median |relative error| over the sampled compute ops
    std::size_t compared_ops = 0;
    double headline_error = 0.0;            // the largest |error| the verdict looks at
    Verdict verdict = Verdict::Off;
    std::string verdict_line;
};

std::optional<double> relative_error(double predicted, double measured);

// Within 5 % (the goal after calibration), within 10 %, or off by more.
Verdict verdict_for(double abs_error);

// The verdict looks at iteration time, peak memory and, when per-op times were measured, the
// median per-op error. `tokens_per_iteration` turns the measured time into throughput.
Comparison compare(const Figures& predicted, const Figures& measured, double tokens_per_iteration);

void write_text(std::ostream& out, const Comparison& c);
void write_csv(std::ostream& out, const Comparison& c);
nlohmann::json comparison_json(const Comparison& c, const std::string& scenario);

}  // namespace cuboid::validate
