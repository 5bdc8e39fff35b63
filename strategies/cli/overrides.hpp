// --set KEY=VALUE: one scenario key overridden by its dotted path, after the file is read, with
// the same checks as in the file. Errors name "--set" as their file and the key as given.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/cli/scenario_keys.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

inline constexpr std::string_view kOverrideFile = "--set";

struct Override {
    std::string key;
    std::string value;
};

// "parallel.tensor=8" -> {parallel.tensor, 8}; InputError when there is no '=' or no key.
Override parse_override(std::string_view assignment);

// Sets one key. Relative paths are taken from the current directory, as on a command line.
void apply_override(Scenario& s, const Override& o, const NameResolvers& names);

// Applies every assignment: model.preset ones first (a preset replaces the whole model, so the
// other model keys given with --set still win), then the rest in order. Returns the keys set.
std::vector<std::string> apply_overrides(Scenario& s, std::span<const std::string> assignments,
                                         const NameResolvers& names);

}  // namespace cuboid::cli
