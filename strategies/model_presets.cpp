#include "strategies/model_presets.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "hardware_models/name_match.hpp"

namespace cuboid {
namespace {

int int_field(const YAML::Node& n, const char* key, int fallback) {
    const YAML::Node v = n[key];
    return v ? v.as<int>() : fallback;
}

ModelPreset parse_one(const YAML::Node& n) {
    ModelPreset p;
    p.name = n["name"].as<std::string>();
    if (n["aliases"]) p.aliases = n["aliases"].as<std::vector<std::string>>();
    p.description = n["description"].as<std::string>("");
    p.source = n["source"].as<std::string>("");
    ModelSpec& s = p.spec;
    s.preset = p.name;
    s.layers = n["layers"].as<int>();
    s.hidden = n["hidden"].as<int>();
    s.heads = n["heads"].as<int>();
    s.kv_heads = int_field(n, "kv_heads", 0);
    s.head_dim = int_field(n, "head_dim", 0);
    s.ffn_hidden = int_field(n, "ffn_hidden", 0);
    s.seq_len = n["seq_len"].as<int>();
    s.vocab = n["vocab"].as<int>();
    s.swiglu = n["swiglu"] ? n["swiglu"].as<bool>() : false;
    s.experts = int_field(n, "experts", 0);
    s.experts_per_token = int_field(n, "experts_per_token", 0);
    s.expert_ffn_hidden = int_field(n, "expert_ffn_hidden", 0);
    s.shared_experts = int_field(n, "shared_experts", 0);
    s.dense_layers = int_field(n, "dense_layers", 0);
    if (n["attention_kind"]) {
        const auto kind = n["attention_kind"].as<std::string>();
        if (kind != "mha" && kind != "mla") throw std::invalid_argument("model preset " + p.name + ": attention_kind " + kind);
        s.attention_kind = kind == "mla" ? AttentionKind::Mla : AttentionKind::Mha;
    }
    s.q_lora_rank = int_field(n, "q_lora_rank", 0);
    s.kv_lora_rank = int_field(n, "kv_lora_rank", 0);
    s.qk_nope_head_dim = int_field(n, "qk_nope_head_dim", 0);
    s.qk_rope_head_dim = int_field(n, "qk_rope_head_dim", 0);
    s.v_head_dim = int_field(n, "v_head_dim", 0);
    return p;
}

bool answers_to(const ModelPreset& p, const std::string& name) {
    return p.name == name || std::find(p.aliases.begin(), p.aliases.end(), name) != p.aliases.end();
}

}  // namespace

std::vector<ModelPreset> parse_model_presets(std::string_view yaml, const std::string& origin) {
    std::vector<ModelPreset> out;
    try {
        const YAML::Node root = YAML::Load(std::string(yaml));
        out.reserve(root.size());
        for (const auto& n : root) out.push_back(parse_one(n));
    } catch (const YAML::Exception& e) {
        throw InputError(InputLocation{origin, e.mark.line + 1, ""}, e.what());
    }
    return out;
}

std::vector<ModelPreset> model_presets() {
    return parse_model_presets(builtin_models_yaml(), "strategies/models.yaml");
}

void apply_preset(const std::string& name, ModelSpec& model, const InputLocation& where) {
    const auto presets = model_presets();
    const auto it = std::find_if(presets.begin(), presets.end(),
                                 [&](const ModelPreset& p) { return answers_to(p, name); });
    if (it == presets.end()) {
        std::vector<std::string> names;
        for (const auto& p : presets) {
            names.push_back(p.name);
            names.insert(names.end(), p.aliases.begin(), p.aliases.end());
        }
        std::string allowed;
        for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
        throw InputError(where, "unknown model preset '" + name + "'; allowed: " + allowed + did_you_mean(name, names));
    }
    model = it->spec;
    model.preset = name;
}

}  // namespace cuboid
