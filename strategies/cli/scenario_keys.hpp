// Every key a scenario may set, by dotted path, with its type, unit, default, allowed range and
// meaning, and the function that checks and stores a value written as text. The YAML loader and
// --set both go through this one table, so they accept and reject exactly the same values.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/errors.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

// Lookups owned by other layers (model presets, the GPU catalog). Each throws InputError for an
// unknown name, listing the known ones; an empty function means "not checked here".
struct NameResolvers {
    std::function<ModelSpec(const std::string& preset)> model_preset;
    std::function<std::string(const std::string& gpu)> gpu_name;  // the catalog name of a name or alias
    // The rack-scale system a catalog GPU ships in (none for a GPU sold as a part).
    std::function<std::optional<hw::GpuSystem>(const std::string& gpu)> gpu_system;
};

struct SetContext {
    const NameResolvers& names;
    std::filesystem::path base_dir;  // relative paths (cluster.profile) are taken from here
};

using Setter = void (*)(Scenario&, std::string_view value, const InputLocation&, const SetContext&);

struct KeyDef {
    std::string_view key;           // dotted path: "parallel.tensor"
    std::string_view type;          // integer | number | boolean | text | name | path | map
    std::string_view unit;          // "" when dimensionless
    std::string_view default_text;  // what applies when the key is absent
    std::string_view allowed;       // range or names
    std::string_view meaning;
    Setter set = nullptr;           // null: not a single value (the sweep map)
};

std::span<const KeyDef> scenario_keys();

// The definition of a leaf key, or null.
const KeyDef* find_key(std::string_view dotted);
// True for a key that holds other keys ("model", "cluster.inter_node").
bool is_section(std::string_view dotted);
// The keys directly under `section` ("" for the top level), in table order.
std::vector<std::string> allowed_children(std::string_view section);
// model.preset and model.hf_config: each gives the whole model, so it is applied before the other
// model keys (which then override it) whatever their order in a file or on the command line.
bool replaces_model(std::string_view dotted);
// All leaf keys that hold a single value (what --set and sweep accept).
std::vector<std::string> settable_keys();

}  // namespace cuboid::cli
