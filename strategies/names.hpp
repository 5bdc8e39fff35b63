// Scenario words <-> enums. The parse functions throw InputError at `where` naming the allowed
// values; the name lists feed `cuboid list schedules|tensor-modes`.
#pragma once

#include <string>
#include <vector>

#include "hardware_models/errors.hpp"
#include "sim/program.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

struct NamedValue {
    std::string name;
    std::string description;  // one line
};

std::vector<NamedValue> schedule_names();
std::vector<NamedValue> recompute_names();
std::vector<NamedValue> tensor_mode_names();
std::vector<NamedValue> precision_names();
std::vector<NamedValue> atp_order_names();  // enum AtpOrder
std::vector<NamedValue> context_mode_names();
std::vector<NamedValue> fp8_recipe_names();

Schedule parse_schedule(const std::string& word, const InputLocation& where);
Recompute parse_recompute(const std::string& word, const InputLocation& where);
TensorMode parse_tensor_mode(const std::string& word, const InputLocation& where);
sim::Precision parse_precision(const std::string& word, const InputLocation& where);
AtpOrder parse_atp_order(const std::string& word, const InputLocation& where);
ContextMode parse_context_mode(const std::string& word, const InputLocation& where);
Fp8Recipe parse_fp8_recipe(const std::string& word, const InputLocation& where);
std::string fp8_recipe_name(Fp8Recipe r);
std::string precision_name(sim::Precision p);

}  // namespace cuboid
