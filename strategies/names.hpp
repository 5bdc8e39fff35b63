// The descriptor tables of the scenario's pluggable kinds: one row per value, naming the value
// itself (so no list depends on the enum's order), its scenario word and one line with its
// source. The parser, `cuboid list`, the search space and every printed name read these tables;
// the parse functions throw InputError at `where` naming the allowed words.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "hardware_models/errors.hpp"
#include "sim/program.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

template <class E>
struct Descriptor {
    E value;
    const char* name;         // the scenario word
    const char* description;  // one line, with the source paper or library
};

std::span<const Descriptor<Schedule>> schedule_table();
std::span<const Descriptor<Recompute>> recompute_table();
std::span<const Descriptor<RecomputeModule>> recompute_module_table();
std::span<const Descriptor<TensorMode>> tensor_mode_table();
std::span<const Descriptor<ContextMode>> context_mode_table();
std::span<const Descriptor<Fp8Recipe>> fp8_recipe_table();
std::span<const Descriptor<AtpOrder>> atp_order_table();
std::span<const Descriptor<sim::Precision>> precision_table();

struct NamedValue {
    std::string name;
    std::string description;  // one line
};

// A table's rows as words and descriptions, in the table's order (`cuboid list`, search spaces).
template <class E>
std::vector<NamedValue> named_values(std::span<const Descriptor<E>> table) {
    std::vector<NamedValue> out;
    for (const auto& d : table) out.push_back({d.name, d.description});
    return out;
}

inline std::vector<NamedValue> schedule_names() { return named_values(schedule_table()); }
inline std::vector<NamedValue> recompute_names() { return named_values(recompute_table()); }
inline std::vector<NamedValue> tensor_mode_names() { return named_values(tensor_mode_table()); }
inline std::vector<NamedValue> precision_names() { return named_values(precision_table()); }
inline std::vector<NamedValue> atp_order_names() { return named_values(atp_order_table()); }
inline std::vector<NamedValue> context_mode_names() { return named_values(context_mode_table()); }
inline std::vector<NamedValue> fp8_recipe_names() { return named_values(fp8_recipe_table()); }

Schedule parse_schedule(const std::string& word, const InputLocation& where);
Recompute parse_recompute(const std::string& word, const InputLocation& where);
RecomputeModule parse_recompute_module(const std::string& word, const InputLocation& where);
TensorMode parse_tensor_mode(const std::string& word, const InputLocation& where);
sim::Precision parse_precision(const std::string& word, const InputLocation& where);
AtpOrder parse_atp_order(const std::string& word, const InputLocation& where);
ContextMode parse_context_mode(const std::string& word, const InputLocation& where);
Fp8Recipe parse_fp8_recipe(const std::string& word, const InputLocation& where);
std::string fp8_recipe_name(Fp8Recipe r);
std::string precision_name(sim::Precision p);

}  // namespace cuboid
