#include "strategies/cli/scenario_loader.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hardware_models/input_file.hpp"
#include "hardware_models/yaml_text.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/framework.hpp"

namespace cuboid::cli {
namespace {

std::string kind_of(const YAML::Node& n) {
    if (n.IsMap()) return "a map";
    if (n.IsSequence()) return "a list";
    if (n.IsNull()) return "nothing";
    return fmt::format("'{}'", n.Scalar());
}

// Walks the YAML tree, checking every key against the key table.
class Walker {
public:
    Walker(Scenario& s, SetContext ctx) : s_(s), ctx_(std::move(ctx)) {}

    void walk_map(const YAML::Node& map, const std::string& prefix) {
        // model.preset or model.hf_config first, so the explicit model keys written beside it
        // override it.
        const auto dotted = [&](const YAML::Node& key) {
            const std::string name = key_text(key, prefix);
            return prefix.empty() ? name : prefix + "." + name;
        };
        for (const bool whole_model : {true, false})
            for (auto it = map.begin(); it != map.end(); ++it)
                if (replaces_model(dotted(it->first)) == whole_model) walk_entry(it->first, it->second, prefix);
    }

private:
    InputLocation at(const std::string& key, const YAML::Node& node) const {
        return {s_.source_file, node.Mark().line >= 0 ? node.Mark().line + 1 : 0, key};
    }

    std::string key_text(const YAML::Node& key, const std::string& prefix) const {
        if (!key.IsScalar())
            throw InputError(at(prefix, key), fmt::format("a key must be a plain name, got {}", kind_of(key)));
        return key.Scalar();
    }

    void walk_entry(const YAML::Node& key_node, const YAML::Node& value, const std::string& prefix) {
        const std::string name = key_node.Scalar();
        const std::string key = prefix.empty() ? name : prefix + "." + name;
        const InputLocation where = at(key, key_node);
        record(key, where);
        if (key == "sweep") return read_sweep(value, where);
        if (const KeyDef* def = find_key(key)) return set_leaf(*def, value, where);
        if (is_section(key)) {
            if (!value.IsMap())
                throw InputError(where, fmt::format("expected a map with keys {}, got {}",
                                                    join(allowed_children(key)), kind_of(value)));
            return walk_map(value, key);
        }
        throw InputError(where, unknown_name_message("key", name, allowed_children(prefix), prefix));
    }

    // Duplicate keys were refused when the text was parsed (hw::load_yaml_document).
    void record(const std::string& key, const InputLocation& where) { s_.key_lines.emplace(key, where.line); }

    void set_leaf(const KeyDef& def, const YAML::Node& value, const InputLocation& where) {
        if (def.type == "list" && value.IsSequence()) return def.set(s_, joined(value, def, where), where, ctx_);
        if (!value.IsScalar())
            throw InputError(where, fmt::format("expected a single {} ({}), got {}", def.type, def.allowed,
                                                kind_of(value)));
        def.set(s_, value.Scalar(), where, ctx_);
    }

    // A list key's items as one text "a,b,c" for its setter.
    std::string joined(const YAML::Node& list, const KeyDef& def, const InputLocation& where) const {
        std::string text;
        for (const auto& item : list) {
            if (!item.IsScalar())
                throw InputError(at(where.key, item), fmt::format("expected a list of single values ({}), got {}",
                                                                  def.allowed, kind_of(item)));
            text += (text.empty() ? "" : ",") + item.Scalar();
        }
        return text;
    }

    void read_sweep(const YAML::Node& map, const InputLocation& where) {
        if (!map.IsMap())
            throw InputError(where, fmt::format("expected a map of dotted keys to lists, got {}", kind_of(map)));
        for (auto it = map.begin(); it != map.end(); ++it) {
            const std::string key = key_text(it->first, "sweep");
            const InputLocation axis_at = at("sweep." + key, it->first);
            record(axis_at.key, axis_at);
            const KeyDef* def = find_key(key);
            if (!def || !def->set)
                throw InputError(axis_at, unknown_name_message("key to sweep", key, settable_keys()));
            s_.sweep.emplace_back(key, read_axis(*def, it->second, axis_at));
        }
    }

    std::vector<std::string> read_axis(const KeyDef& def, const YAML::Node& list, const InputLocation& where) {
        if (!list.IsSequence() || list.size() == 0)
            throw InputError(where, fmt::format("expected a non-empty list of values, got {}", kind_of(list)));
        std::vector<std::string> values;
        for (const auto& item : list) {
            const InputLocation item_at = at(where.key, item);
            // A list key takes each of its values as a list of its own ([[4, 2], [2, 4]]).
            const bool list_value = def.type == "list" && item.IsSequence();
            if (!item.IsScalar() && !list_value)
                throw InputError(item_at, fmt::format("expected a single {}, got {}", def.type, kind_of(item)));
            const std::string value = list_value ? joined(item, def, item_at) : item.Scalar();
            Scenario scratch;  // each value is checked now, with the rules it will meet in a sweep
            def.set(scratch, value, item_at, ctx_);
            // A value given twice would simulate its points twice, as rows nothing tells apart.
            if (std::find(values.begin(), values.end(), value) != values.end())
                throw InputError(item_at, fmt::format("'{}' is listed twice", value));
            values.push_back(value);
        }
        return values;
    }

    Scenario& s_;
    SetContext ctx_;
};

std::string read_file(const std::string& path) {
    return read_input_file(path, kMaxYamlFileBytes, "scenario file");
}

}  // namespace

Scenario load_scenario_text(const std::string& text, const std::string& file, const std::filesystem::path& base_dir,
                            const NameResolvers& names) {
    const YAML::Node root = hw::load_yaml_document(text, file, "a scenario");
    Scenario s;
    apply_framework(s);  // the default framework's settings, until the file says otherwise
    s.source_file = file;
    if (!root.IsMap())
        throw InputError({file, root.IsNull() ? 0 : root.Mark().line + 1, ""},
                         fmt::format("expected a map with keys {}, got {}", join(allowed_children("")), kind_of(root)));
    Walker(s, SetContext{names, base_dir}).walk_map(root, "");
    if (s.key_lines.contains("model.preset") && s.key_lines.contains("model.hf_config"))
        throw InputError(locate(s, "model.hf_config"),
                         "model.preset and model.hf_config each give the whole model; keep one of the two");
    if (s.name.empty()) s.name = std::filesystem::path(file).stem().string();
    return s;
}

Scenario load_scenario_file(const std::string& path, const NameResolvers& names) {
    return load_scenario_text(read_file(path), path, std::filesystem::path(path).parent_path(), names);
}

InputLocation locate(const Scenario& s, const std::string& key) {
    for (std::string k = key; !k.empty(); k = k.substr(0, std::min(k.size(), k.rfind('.')))) {
        if (const auto it = s.key_lines.find(k); it != s.key_lines.end()) return {s.source_file, it->second, key};
        if (k.find('.') == std::string::npos) break;
    }
    return {s.source_file, 0, key};
}

void check_complete(const Scenario& s) {
    const std::pair<const char*, int> model_dims[] = {{"model.layers", s.model.layers},
                                                      {"model.hidden", s.model.hidden},
                                                      {"model.heads", s.model.heads},
                                                      {"model.seq_len", s.model.seq_len},
                                                      {"model.vocab", s.model.vocab}};
    for (const auto& [key, value] : model_dims)
        if (value <= 0)
            throw InputError(locate(s, key),
                             "missing: give this key, a model.preset (`cuboid list models`) or a model.hf_config");
    if (s.training.global_batch <= 0)
        throw InputError(locate(s, "training.global_batch"), "missing: sequences per iteration, an integer >= 1");
}

namespace {

// Whether a sweep over `key` includes `value`: then the points with that value read the keys that
// only `value` reads.
bool sweep_includes(const Scenario& s, const std::string& key, const std::string& value) {
    const auto axis = std::find_if(s.sweep.begin(), s.sweep.end(), [&](const auto& a) { return a.first == key; });
    return axis != s.sweep.end() && std::find(axis->second.begin(), axis->second.end(), value) != axis->second.end();
}

bool sweeps(const Scenario& s, const std::string& key) {
    return std::any_of(s.sweep.begin(), s.sweep.end(), [&](const auto& a) { return a.first == key; });
}

}  // namespace

void check_no_ignored_keys(const Scenario& s) {
    if (s.parallel.tensor_mode != TensorMode::Atp && !sweep_includes(s, "parallel.tensor_mode", "atp")) {
        const std::string why = "only parallel.tensor_mode: atp reads this key, and the tensor mode is not atp; "
                                "remove the key or set parallel.tensor_mode: atp";
        if (s.parallel.atp_mesh != std::array<int, 2>{0, 0}) throw InputError(locate(s, "parallel.atp_mesh"), why);
        if (s.parallel.atp_order != AtpOrder::Auto) throw InputError(locate(s, "parallel.atp_order"), why);
    }
    // Given layer counts replace the partitioner, so a non-default partition method would do nothing.
    if ((!s.parallel.stage_layers.empty() || sweeps(s, "parallel.stage_layers")) &&
        (s.parallel.partition != PartitionMethod::Auto || sweeps(s, "parallel.partition")))
        throw InputError(locate(s, "parallel.partition"),
                         "parallel.stage_layers gives the layers of every chunk, so the partition method is not "
                         "used; remove one of the two");
}

}  // namespace cuboid::cli
