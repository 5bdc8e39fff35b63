// Parsing of the scenario's enumerated names. The names and parsers belong to the layers that
// own the enums (strategies/names.hpp for the plan, hardware_models/catalog.hpp for the cluster);
// here they only gain a "did you mean" for a near miss.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/errors.hpp"

namespace cuboid::cli {

// `e` with "(did you mean 'x'?)" appended when an allowed name is close to `word`.
InputError with_suggestion(const InputError& e, std::string_view word, std::span<const std::string> allowed);

// Calls parse(word, where); on failure rethrows its error with the closest allowed name added.
template <class Parse>
auto parse_suggesting(Parse parse, std::span<const std::string> allowed, std::string_view word,
                      const InputLocation& where) {
    try {
        return parse(std::string(word), where);
    } catch (const InputError& e) {
        throw with_suggestion(e, word, allowed);
    }
}

// Allowed names of each enumerated key, in declaration order.
std::vector<std::string> schedule_words();
std::vector<std::string> recompute_words();
std::vector<std::string> tensor_mode_words();
std::vector<std::string> precision_words();
std::vector<std::string> context_mode_words();
std::vector<std::string> fp8_recipe_words();
std::vector<std::string> intra_node_words();
std::vector<std::string> inter_node_words();
std::vector<std::string> topology_words();

}  // namespace cuboid::cli
