// The JSON result of `cuboid run`: the fields of the output contract (docs/scenario.md)
// under their contract names, plus extras (plan echo, fingerprint, per-stage memory, time to
// train, cost, energy when known).
#pragma once

#include <nlohmann/json.hpp>

#include "strategies/cli/fitting_changes.hpp"
#include "strategies/run.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

// The data-parallel degree the plan runs with: as given, else GPUs / (tensor * pipeline).
int effective_data_parallel(const Scenario& s);

nlohmann::ordered_json plan_json(const Scenario& s);
nlohmann::ordered_json result_json(const Scenario& s, const RunResult& r);

// The `goodput` object of the result: the failure model's inputs and figures (strategies/goodput.hpp);
// figures that are infinite (nothing fails) are left out.
nlohmann::ordered_json goodput_json(const Goodput& g);

// The `memory` object of the result: per pipeline stage the peak in its parts (weights, gradients,
// optimizer state, pipeline buffers, activations; whole bytes that sum exactly to the stage's
// peak) and which stage peaks.
nlohmann::ordered_json memory_json(const RunResult& r);

// `memory.fitting_changes` of an out-of-memory run: each change as its --set assignments, with
// the changed plan's simulated peak and iteration time.
nlohmann::ordered_json fitting_changes_json(const std::vector<FittingChange>& changes);

// "0x0123456789abcdef": a string, so that no JSON reader rounds the 64-bit value.
std::string fingerprint_text(std::uint64_t fingerprint);

}  // namespace cuboid::cli
