// The summary figures of the `modern` set: how many rows cuboid can express, the error of those
// it simulates, the error on the acceptance subset (dense H100 rows without context or expert
// parallelism), and per block the weak scaling of a model measured at several GPU counts.
#pragma once

#include <string>
#include <vector>

#include "validate/published/published_check.hpp"

namespace cuboid::validate {

// Targets on the subset (--enforce): MAPE and the worst row.
inline constexpr double kModernSubsetMape = 0.10;
inline constexpr double kModernSubsetWorst = 0.20;

// Per-GPU throughput from the smallest GPU count to the largest, for one model of one block on one
// GPU and precision (simulated rows only): relative change, measured and predicted.
struct WeakScaling {
    std::string block, model, gpu, precision;
    int gpus_from = 0, gpus_to = 0;
    double measured_change = 0.0;
    double predicted_change = 0.0;
};

struct ErrorFigures {
    int simulated = 0;
    double mape = 0.0;
    double worst = 0.0;      // |relative error| of the worst row
    std::string worst_row;   // its label
};

struct ModernSummary {
    int rows = 0;
    int expressible = 0;
    int failures = 0;        // expressible rows that could not be simulated
    int out_of_memory = 0;   // simulated rows whose plan cuboid reports as not fitting
    ErrorFigures all;        // every simulated row
    int subset_rows = 0;     // dense H100 rows without context or expert parallelism, expressible or not
    ErrorFigures subset;
    std::vector<WeakScaling> scaling;
};

ModernSummary summarise_modern(const std::vector<ModernRow>& rows);

// Prints the summary lines; true when the subset's targets are met and no row failed.
bool print_modern_summary(const ModernSummary& summary);

}  // namespace cuboid::validate
