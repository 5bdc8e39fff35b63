// Help for a misspelt name: the closest allowed name by edit distance, and lists for messages.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hardware_models/name_match.hpp"

namespace cuboid::cli {

using cuboid::edit_distance;

// closest_name (hardware_models/name_match.hpp): the same name ignoring case, else the nearest
// plausible typo.
std::optional<std::string> closest(std::string_view given, std::span<const std::string> allowed);

// "a, b, c"
std::string join(std::span<const std::string> names, std::string_view separator = ", ");

// "unknown key 'x'; allowed: a, b, c (did you mean 'a'?)", or with a section
// "unknown key 'x' in 'parallel'; allowed: ..."
std::string unknown_name_message(std::string_view what, std::string_view given,
                                 std::span<const std::string> allowed, std::string_view section = {});

}  // namespace cuboid::cli
