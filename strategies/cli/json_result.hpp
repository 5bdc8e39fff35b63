// The JSON result of `cuboid run`: the fields of the output contract (docs/scenario.md)
// under their contract names, plus extras (plan echo, fingerprint, per-stage memory, time to
// train, cost, energy when known).
#pragma once

#include <nlohmann/json.hpp>

#include "strategies/run.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

// The data-parallel degree the plan runs with: as given, else GPUs / (tensor * pipeline).
int effective_data_parallel(const Scenario& s);

nlohmann::ordered_json plan_json(const Scenario& s);
nlohmann::ordered_json result_json(const Scenario& s, const RunResult& r);

// "0x0123456789abcdef": a string, so that no JSON reader rounds the 64-bit value.
std::string fingerprint_text(std::uint64_t fingerprint);

}  // namespace cuboid::cli
