// The prediction side of a validation: run_scenario's result plus the figures the executor
// measures, taken from the same simulation (an observer of its op starts and ends).
#pragma once

#include "sim/program.hpp"
#include "strategies/run.hpp"
#include "strategies/scenario.hpp"
#include "validate/report/figures.hpp"

namespace cuboid::validate {

// Per-op predicted times are kept for the first ranks only (a validation run has a few GPUs; a
// whole-cluster scenario would hold every op of every rank).
inline constexpr std::uint32_t kPerOpRanks = 64;

struct Prediction {
    RunResult result;
    sim::Program program;        // the very program run_scenario simulated
    Figures figures;             // the same figures as a measurement
    double tokens_per_iteration = 0.0;
};

// Throws InputError when the plan is invalid (as run_scenario).
Prediction predict(const Scenario& scenario);

// The program run_scenario builds for `scenario` (same checkpointing choice), without simulating.
sim::Program scenario_program(const Scenario& scenario);

}  // namespace cuboid::validate
