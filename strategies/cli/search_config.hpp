// The `search:` section of a scenario (docs/search.md): lists that restrict the plan space of
// `cuboid search`, each checked with the rules of its scenario key, errors at file:line:key.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "strategies/cli/scenario_keys.hpp"
#include "strategies/cli/search_space.hpp"

namespace cuboid::cli {

struct SearchScenario {
    Scenario scenario;   // the rest of the file, read by the scenario loader
    YAML::Node section;  // the `search:` map; undefined without one
};

// Reads a scenario with an optional `search:` section. The scenario keys are read by the
// scenario loader (same checks, same line numbers); the section itself is read here.
SearchScenario load_search_scenario(const std::string& path, const NameResolvers& names);
// The same from the file's text; `path` names it in errors and its folder resolves relative paths.
SearchScenario load_search_scenario_text(const std::string& text, const std::string& path, const NameResolvers& names);

// The default space of the scenario (after any --set on it) with the section's lists in place.
SearchSpace search_space_of(const SearchScenario& s);

// Replaces the lists of `space` that the map `section` names (the keys of search_section_keys(),
// max_gpus a single integer). `prefix` is the dotted key of the section ("search",
// "clusters[0].search") for the error locations.
void read_search_section(const YAML::Node& section, const std::string& file, const std::string& prefix,
                         SearchSpace& space);

// The keys read_search_section accepts.
std::vector<std::string> search_section_keys();

}  // namespace cuboid::cli
