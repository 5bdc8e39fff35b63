// `cuboid whatif`: the best plan of every (cluster, model) pair of a study, and what training the
// model's token budget on that cluster with that plan costs: time, GPU-hours, money, energy.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "strategies/cli/search_run.hpp"
#include "strategies/cli/whatif_study.hpp"

namespace cuboid::cli {

struct WhatifRow {
    std::string cluster;
    std::string model;
    Scenario scenario;             // the pair, as searched
    SearchResult search;
    std::optional<std::size_t> best;   // point index in search.plans of the fastest plan that fits
    // From the best plan (set when best is):
    double time_to_train_s = 0.0;  // tokens / (tokens per second)
    double gpu_hours = 0.0;        // GPUs x hours
    double cost_usd = 0.0;         // GPU-hours x price per GPU-hour
    double energy_kwh = 0.0;       // nodes x node power x hours x PUE
};

struct WhatifResult {
    std::string name;
    std::string source_file;
    double pue = 1.0;
    std::vector<WhatifRow> rows;   // clusters outer, models inner, in file order
    int threads = 1;
    double wall_s = 0.0;
};

// The figures of a row from its best plan's simulation (a row without a best plan is left at 0).
void fill_training_figures(WhatifRow& row, double pue);

WhatifResult run_whatif(const Study& study, const NameResolvers& names, int threads);

enum class Criterion { Time, Cost, Energy };
// The row index of the winner of `model` by a criterion (lowest value), none if no row has a plan.
std::optional<std::size_t> winner(const WhatifResult& r, const std::string& model, Criterion c);

}  // namespace cuboid::cli
