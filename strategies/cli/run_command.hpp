// `cuboid run`: load a scenario, apply --set, simulate one iteration, write the report, the JSON
// result and the trace.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "strategies/cli/scenario_keys.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

struct RunRequest {
    std::string scenario_path;
    std::vector<std::string> sets;      // KEY=VALUE, in command-line order
    std::optional<std::string> json;    // file, or "-" for standard output
    std::optional<std::string> trace;   // Trace Event JSON file
    bool quiet = false;                 // no human report
    bool print_schedule = false;        // the per-stage compute order, before the report
    bool fold = false;                  // --fold: symmetry-folded simulation (RunOptions::fold)
    bool progress = false;              // a progress line on `err` (the caller knows if it is a terminal)
    WorkLimits limits;                  // --max-events, --max-memory
};

// Exit codes of the output contract.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = 3;
inline constexpr int kExitOutputFailed = 4;  // an output could not be written (sim::OutputError)
// A limit (--time-limit, --max-memory) stopped a search before any plan fit: the outputs are
// written, marked partial, but whether the space holds a valid plan that fits is unknown.
inline constexpr int kExitStoppedWithoutResult = 5;

// The scenario of a request: file, overrides, completeness check. `overridden` receives the keys
// given with --set (errors about them point at --set, not at the file).
Scenario prepare_scenario(const RunRequest& request, const NameResolvers& names,
                          std::vector<std::string>* overridden = nullptr);

// --memory-headroom (sweep, search): a fraction in [0, 1), else InputError naming the option.
void check_memory_headroom(double fraction);

// --time-limit (search, whatif): absent, or a positive finite number of seconds, else InputError.
void check_time_limit(const std::optional<double>& seconds);

// Throws InputError for bad input, sim::OutputError for an output it could not write; returns kExitOk or kExitOutOfMemory.
int run_command(const RunRequest& request, std::ostream& out, std::ostream& err);

}  // namespace cuboid::cli
