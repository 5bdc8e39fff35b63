// Named model shapes (GPT rows of Megatron SC'21, GPT-3, Llama 2 and 3), kept as data in
// strategies/models.yaml and compiled into the library. Each call parses the data into a value:
// there is no registry object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/errors.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

struct ModelPreset {
    std::string name;
    std::vector<std::string> aliases;
    std::string description;  // one line, for `cuboid list models`
    std::string source;       // paper / configuration the numbers come from
    ModelSpec spec;           // spec.preset == name
};

// The text of strategies/models.yaml as compiled in.
std::string_view builtin_models_yaml();

// Parses a preset list (the format of models.yaml). `origin` names the text in error messages.
std::vector<ModelPreset> parse_model_presets(std::string_view yaml, const std::string& origin);

// The built-in presets, in file order.
std::vector<ModelPreset> model_presets();

// Overwrites every shape field of `model` with the preset `name` (or one of its aliases) and
// sets model.preset. Throws InputError at `where` listing the allowed names when unknown.
void apply_preset(const std::string& name, ModelSpec& model,
                  const InputLocation& where = InputLocation{"", 0, "model.preset"});

}  // namespace cuboid
