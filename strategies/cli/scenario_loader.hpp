// Reads a scenario file (YAML, format in docs/scenario.md) into a Scenario. Every problem stops
// the load with an InputError that names the file, the line and the dotted key, and says what is
// allowed; nothing is silently ignored.
#pragma once

#include <filesystem>
#include <string>

#include "strategies/cli/scenario_keys.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

// Reads and checks `path`; key_lines gets the (1-based) line of every key. model.preset is
// applied before the other model keys whatever their order in the file. Completeness (a model
// and a global batch given) is checked separately, after any --set overrides.
Scenario load_scenario_file(const std::string& path, const NameResolvers& names);

// The same from text already in memory; `file` names it in errors and `base_dir` resolves
// relative paths.
Scenario load_scenario_text(const std::string& text, const std::string& file,
                            const std::filesystem::path& base_dir, const NameResolvers& names);

// Where a key was written: its own line, else the line of its nearest enclosing section, else
// the file alone.
InputLocation locate(const Scenario& s, const std::string& key);

// Throws InputError when a value that has no default is missing (model dimensions without a
// preset, the global batch).
void check_complete(const Scenario& s);

// Throws InputError when a key is given that the chosen mode ignores: parallel.atp_mesh or
// parallel.atp_order with a tensor_mode other than atp (a sweep over tensor_mode that includes
// atp may keep them, as the atp points read them), and parallel.partition other than auto beside
// parallel.stage_layers (the layer counts replace the partitioner).
void check_no_ignored_keys(const Scenario& s);

}  // namespace cuboid::cli
