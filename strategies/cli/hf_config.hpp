// model.hf_config: a Hugging Face transformers config.json read into cuboid's model shape
// (docs/scenario.md, "Importing a Hugging Face config"). Decoder-only shapes of the Llama,
// Mistral/Mixtral, Qwen2/Qwen3 (their mixtures of experts and head sizes included), DeepSeek,
// GPT-2 and GPT-NeoX families map onto the model keys; a field that would change the FLOPs or
// memory in a way cuboid cannot model (latent attention, multi-token prediction, experts on only
// some layers) is refused, naming every such field as not mapped and the fields that were
// mapped. The fields no check consulted are recorded as not read (ModelImport::fields_not_read).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/errors.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

// Config files are a few KiB; the cap only refuses a wrong file (a tokenizer.json, weights).
inline constexpr std::size_t kMaxHfConfigBytes = std::size_t{1} << 20;

// The model_type values understood, in the order the docs list them.
std::vector<std::string> hf_model_types();

// The model shape of config.json text. `file` names the text in errors and in
// ModelSpec::imported. Throws InputError at {file, 0, JSON pointer} ("/hidden_size") for text
// that is not JSON, not an object, a missing or mistyped field, an unknown model_type, or a field
// cuboid cannot model.
ModelSpec import_hf_config(std::string_view json_text, const std::string& file);

// The same from a file (read through read_input_file, at most kMaxHfConfigBytes).
ModelSpec import_hf_config_file(const std::string& path);

}  // namespace cuboid::cli
