#include "validate/published/row_simulation.hpp"

#include <algorithm>
#include <mutex>
#include <fmt/core.h>

#include "sim/parallel_for.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/run.hpp"

namespace cuboid::validate {
namespace {

CheckRow simulate_row(CheckRow row, const std::string& scenario_path, const std::vector<std::string>& sets,
                      const cli::NameResolvers& names, const CheckOptions& options) {
    try {
        Scenario scenario = cli::load_scenario_file(scenario_path, names);
        cli::apply_overrides(scenario, sets, names);
        if (!options.profile_override.empty()) scenario.cluster.profile = options.profile_override;
        cli::check_complete(scenario);
        // Folded (sim::SimOptions::fold): exactly the full run's time, with fewer events.
        RunOptions run;
        run.fold = true;
        const RunResult r = run_scenario(scenario, run);
        row.predicted_s = r.iteration_time_s;
        row.peak_memory_gb = r.peak_memory_bytes / 1e9;
        row.memory_capacity_gb = r.memory_capacity_bytes / 1e9;
    } catch (const std::exception& e) {
        row.failure = e.what();
    }
    return row;
}

}  // namespace

std::vector<CheckRow> simulate_rows(const std::vector<RowJob>& jobs, const CheckOptions& options) {
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    std::vector<CheckRow> rows(jobs.size());
    std::size_t done = 0;
    std::mutex progress;
    sim::parallel_for(jobs.size(), static_cast<int>(std::min<std::size_t>(options.threads, 1024)), [&](std::size_t i) {
        rows[i] = simulate_row(jobs[i].row, jobs[i].scenario_path, jobs[i].sets, names, options);
        if (!options.progress) return;
        const std::lock_guard<std::mutex> lock(progress);
        fmt::print(stderr, "[{}/{}] {} {} {}\n", ++done, jobs.size(), rows[i].set, rows[i].group, rows[i].label);
    });
    return rows;
}

}  // namespace cuboid::validate
