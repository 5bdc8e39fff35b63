// The rented and owned cost of training (strategies/training_cost.hpp) as report lines and as
// JSON, each with the inputs it used and where they came from: one form for `cuboid run` and
// `cuboid whatif`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strategies/training_cost.hpp"

namespace cuboid::cli {

// "cost      rented ... USD = ..." and one line per input with its source; `gpu` (may be empty)
// names the GPU in the note of a figure the catalog lacks.
std::vector<std::string> cost_lines(const TrainingCost& c, const std::string& gpu);

// {"rented_usd", "owned_usd", "owned_capex_usd", "owned_energy_kwh", "owned_energy_usd", "hours",
//  "inputs": {name: {"value", "source"} or null}}; a cost not known is null.
nlohmann::ordered_json cost_json(const TrainingCost& c);

// The CSV columns of a cost_json object under `prefix` ("training_cost"), dotted: the costs, then
// each input's value and source ("training_cost.inputs.pue.source").
std::vector<std::string> cost_csv_columns(const std::string& prefix);

// The cell of an input's source column (a column of cost_csv_columns ending in ".source") in a row
// holding the cost object, when the input has no figure: says so and names the key that supplies
// it, instead of an empty cell. Empty for any other column or a figure that exists.
std::string missing_input_cell(const nlohmann::ordered_json& row, const std::string& dotted_column);

}  // namespace cuboid::cli
