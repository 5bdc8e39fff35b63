// The `modern` set: each row of validate/data/modern/published_runs.csv becomes `--set`
// overrides on its block's base scenario (scenarios/modern/<block>/<gpu>.yaml), or, when it needs
// what cuboid does not model (context or expert parallelism, FSDP, a GPU outside the catalog,
// MXFP8...), the list of what it needs, derived from its fields.
#pragma once

#include <string>
#include <vector>

#include "strategies/cli/scenario_keys.hpp"
#include "validate/published/csv_table.hpp"
#include "validate/published/published_check.hpp"

namespace cuboid::validate {

// The iteration time a row's measured throughput implies:
// global_batch * seq_len / (tokens_per_s_per_gpu * gpus). Throws std::runtime_error for a row
// measured in another metric.
double modern_measured_seconds(const CsvTable& table, std::size_t row);

// One row, translated. Simulate it (scenario_path with sets) when `needs` is empty and the row
// has no failure; `row.check.failure` is set when the row was refused (a metric or field that
// does not convert), and `needs` is what an unexpressible row requires.
struct ModernJob {
    ModernRow row;
    std::string scenario_path;
    std::vector<std::string> sets;
    std::vector<std::string> needs;
};

ModernJob modern_job(const CsvTable& table, std::size_t row, const cli::NameResolvers& names,
                     const CheckOptions& options);

}  // namespace cuboid::validate
