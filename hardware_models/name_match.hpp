// Help for a mistyped name, for every lookup that refuses one (scenario keys and enumerated
// values, GPUs, node and network kinds, model presets): the allowed name it most likely meant.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cuboid {

// Levenshtein distance (insertions, deletions, substitutions each cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The allowed name `given` most likely meant, comparing in lower case without punctuation ("H100",
// "h100" and "H-100" read alike): the first one equal to it; else the shortest that starts with
// it (3 letters or more: "h100-sxm" -> "h100-sxm-80gb"); else the nearest when near enough to be
// a plausible typo: at most a third of the longer name's letters differ (and at least 2 edits are
// always tolerated).
std::optional<std::string> closest_name(std::string_view given, std::span<const std::string> allowed);

// " (did you mean 'x'?)" for the closest name, or "" when none is close.
std::string did_you_mean(std::string_view given, std::span<const std::string> allowed);

}  // namespace cuboid
