// `cuboid whatif`: the best plan of every (cluster, model) pair of a study, and what training the
// model's token budget on that cluster with that plan costs: time, GPU-hours, money, energy.
#pragma once

#include <functional>
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
    // The cost rented and owned with its inputs' sources (strategies/training_cost.hpp).
    std::optional<TrainingCost> training_cost;
    // The same over the time to train with failures (the best plan's goodput), when it is finite.
    std::optional<TrainingCost> training_cost_with_failures;
};

// What `whatif --rank-by` orders each model's clusters by (lowest first).
enum class Criterion { Time, Cost, OwnedCost, Energy };

struct WhatifResult {
    std::string name;
    std::string source_file;
    double pue = 1.0;
    std::vector<WhatifRow> rows;   // clusters outer, models inner, in file order (those done so far)
    int threads = 1;
    double wall_s = 0.0;
    std::size_t pairs_total = 0;   // the pairs of the study
    std::string stopped;           // why the study ended early (signal, limit, internal error); empty: it did not
    int interrupted_by = 0;        // the signal that stopped it; 0: none
    Criterion rank_by{};           // what the table orders each model's clusters by (time: 0)
    std::string pue_source;        // where the PUE comes from (Study::pue_source)

    // Marked partial: stopped early, or some pairs still to come (a row written while it runs).
    bool partial() const { return !stopped.empty() || rows.size() < pairs_total; }
    // Rows whose search ran to its end (a stop leaves the row of the pair it cut, partial itself).
    std::size_t pairs_done() const;
};

struct WhatifOptions {
    int threads = 1;
    LongWorkStop* stop = nullptr;  // as SearchOptions::stop, for every pair's search
    // Called with the rows so far after each pair's search ends (its row included).
    std::function<void(const WhatifResult&)> row_done;
    // The progress of the pair being searched ("pair 3/12 h100-4k llama3-70b: ...").
    std::function<void(const std::string&)> progress;
    // How a pair's plans are searched; empty: run_search in this process. Across MPI ranks
    // (whatif_command.cpp) each rank searches its share and rank 0 merges them; that search
    // reports an internal error in first_error rather than throwing, so that every rank goes on
    // to the next pair together.
    std::function<SearchResult(const Scenario&, const SearchSpace&, const NameResolvers&, HardwareCache&,
                               const SearchOptions&)>
        search;
    // Whether to stop before the next pair; empty: stop->poll(). Across ranks every rank must get
    // the same answer.
    std::function<bool()> stop_now;
    Criterion rank_by{};  // carried into the result for its outputs
};

// The figures of a row from its best plan's simulation (a row without a best plan is left at 0);
// the cluster's node power and the study's PUE, where it sets one, are the owned cost's.
void fill_training_figures(WhatifRow& row, const Study& study, const StudyCluster& cluster);

// The pairs one after another, each searched on options.threads. A stop (signal, limit) ends the
// pair in progress with the plans it found (its row is kept, its search marked partial) and
// leaves the pairs after it out; an internal error in a pair stops the study the same way.
WhatifResult run_whatif(const Study& study, const NameResolvers& names, const WhatifOptions& options);

// "time", "rented-cost", "owned-cost", "energy": the --rank-by names.
const char* criterion_name(Criterion c);
// A --rank-by value; InputError naming the allowed values otherwise.
Criterion parse_criterion(const std::string& text);
// The row's figure for a criterion: time to train, rented cost, owned cost, energy; none when the
// row has no plan or lacks the figure's inputs (a cost the catalog has no price for).
std::optional<double> criterion_value(const WhatifRow& row, Criterion c);
// The rows of `model` ordered by a criterion, lowest first; rows without its figure last, in file order.
std::vector<std::size_t> ranked_rows(const WhatifResult& r, const std::string& model, Criterion c);
// The row index of the winner of `model` by a criterion (lowest value), none if no row has a plan.
std::optional<std::size_t> winner(const WhatifResult& r, const std::string& model, Criterion c);

}  // namespace cuboid::cli
