// The paper checks of the published strategies (Merak, 3D tensor parallelism, ATP): for each, a
// baseline and a strategy run of one scenario file under scenarios/papers/, the speed-up, and the
// paper's reported speed-up or band to compare it with. Nothing here is fitted to the papers:
// the scenario files fix the setups, the overrides switch the strategy on, the bands are what the
// papers (or the issue) state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "strategies/cli/scenario_keys.hpp"

namespace cuboid::validate {

struct PaperCheck {
    std::string family;                       // "merak" | "tensor3d" | "atp"
    std::string name;                         // "merak-all", "3d-vs-1d", ...
    std::string scenario;                     // path of the setup's scenario file (the baseline)
    std::vector<std::string> baseline_sets;   // --set overrides of the baseline run
    std::vector<std::string> strategy_sets;   // --set overrides of the strategy run
    // Speed-up band the paper reports (or is of the order of); lo = hi = 0: direction only
    // (the strategy must be faster than the baseline).
    double band_lo = 0.0;
    double band_hi = 0.0;
    std::string paper;                        // what the paper says, for the table
};

struct PaperResult {
    PaperCheck check;
    std::string setup;                        // the scenario's name
    std::optional<double> baseline_s;         // iteration times; empty when the run failed
    std::optional<double> strategy_s;
    std::string failure;                      // the first run's error message
    std::string note;                         // e.g. the ATP mesh chosen

    std::optional<double> speedup() const;
    // "in band", "below band", "above band", "faster (as the paper)", "slower (paper: faster)",
    // or "not available: <error>".
    std::string verdict() const;
};

// Every check of `family` ("" for all), scenario paths under `scenario_dir` (scenarios/papers).
std::vector<PaperCheck> paper_checks(const std::string& scenario_dir, const std::string& family);

// Runs a check's two scenarios through run_scenario; errors become the result's failure.
PaperResult run_paper_check(const PaperCheck& check, const cli::NameResolvers& names);

}  // namespace cuboid::validate
