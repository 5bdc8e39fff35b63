#include "strategies/cli/search_config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "hardware_models/input_file.hpp"
#include "hardware_models/yaml_text.hpp"
#include "strategies/cli/enum_names.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/cli/value_parse.hpp"
#include "strategies/names.hpp"

namespace cuboid::cli {
namespace {

InputLocation at(const std::string& file, const std::string& key, const YAML::Node& node) {
    return {file, node.Mark().line >= 0 ? node.Mark().line + 1 : 0, key};
}

// Each item of a non-empty list (a single value counts as a list of one) through `parse`. A value
// listed twice is refused: it would make every plan with it a candidate twice.
template <class T, class Parse>
std::vector<T> read_list(const YAML::Node& value, const InputLocation& where, Parse parse) {
    std::vector<T> out;
    if (value.IsScalar()) {
        out.push_back(parse(value.Scalar(), where));
        return out;
    }
    if (!value.IsSequence() || value.size() == 0)
        throw InputError(where, "expected a non-empty list of values");
    for (const auto& item : value) {
        if (!item.IsScalar()) throw InputError(where, "expected a list of single values");
        const InputLocation at_item{where.file, item.Mark().line + 1, where.key};
        T parsed = parse(item.Scalar(), at_item);
        if (std::find(out.begin(), out.end(), parsed) != out.end())
            throw InputError(at_item, fmt::format("'{}' is listed twice", item.Scalar()));
        out.push_back(std::move(parsed));
    }
    return out;
}

std::vector<int> ints(const YAML::Node& v, const InputLocation& w, int min) {
    return read_list<int>(v, w, [min](const std::string& t, const InputLocation& l) { return int_at_least(t, l, min); });
}

std::vector<int> ints_between(const YAML::Node& v, const InputLocation& w, int min, int max) {
    return read_list<int>(v, w, [min, max](const std::string& t, const InputLocation& l) {
        return int_between(t, l, min, max);
    });
}

// One integer: a key that bounds the search, not an axis of it.
int single_int(const YAML::Node& v, const InputLocation& w, int min) {
    if (!v.IsScalar()) throw InputError(w, fmt::format("expected a single integer >= {}, not a list or map", min));
    return int_at_least(v.Scalar(), w, min);
}

// Names checked by the parser of the scenario key, kept as written (canonical names).
template <class ParseName>
std::vector<std::string> names_of(const YAML::Node& v, const InputLocation& w, ParseName parse,
                                  const std::vector<std::string>& allowed) {
    return read_list<std::string>(v, w, [&](const std::string& t, const InputLocation& l) {
        parse_suggesting(parse, allowed, t, l);
        return t;
    });
}

std::string read_text(const std::string& path) {
    return read_input_file(path, kMaxYamlFileBytes, "scenario file");
}

// The text with the lines [first, last) made empty, so the scenario loader reads the rest with
// its line numbers unchanged.
std::string blank_lines(const std::string& text, int first, int last) {
    std::istringstream in(text);
    std::string out, line;
    for (int n = 0; std::getline(in, line); ++n) out += (n >= first && n < last ? "" : line) + "\n";
    return out;
}

// A shard group of `search.shard_group`: `full` (0, all data x context ranks: the scenario key's
// default) or a count of ranks.
int shard_group_value(const std::string& text, const InputLocation& where) {
    if (text == "full") return 0;
    try {
        return int_at_least(text, where, 1);
    } catch (const InputError&) {
        throw InputError(where, fmt::format("expected 'full' or an integer >= 1, got '{}'", text));
    }
}

// The degree of the layout's axis of that name that the search chooses (search_space.hpp), if any.
const DegreeAxis* degree_axis(const std::string& name) {
    for (const DegreeView* view : {&plan_degrees(), &expert_degrees()})
        for (const DegreeAxis& a : view->chosen)
            if (a.axis == name) return &a;
    return nullptr;
}

}  // namespace

std::vector<std::string> search_section_keys() {
    return {"tensor", "pipeline", "micro_batch", "schedule", "virtual_stages", "recompute", "tensor_mode",
            "overlap_chunks", "sequence_parallel", "zero_stage", "context", "context_mode", "expert", "expert_tensor",
            "shard_group", "max_gpus"};
}

void read_search_section(const YAML::Node& section, const std::string& file, const std::string& prefix,
                         SearchSpace& sp) {
    if (!section.IsMap())
        throw InputError(at(file, prefix, section),
                         fmt::format("expected a map with keys {}", join(search_section_keys())));
    for (auto it = section.begin(); it != section.end(); ++it) {
        const std::string name = it->first.Scalar();
        const InputLocation w = at(file, prefix + "." + name, it->first);
        const YAML::Node v = it->second;
        if (const DegreeAxis* degree = degree_axis(name)) sp.*degree->values = ints(v, w, 1);
        else if (name == "micro_batch") sp.micro_batch = ints(v, w, 1);
        else if (name == "virtual_stages") sp.virtual_stages = ints(v, w, 2);
        else if (name == "overlap_chunks") sp.overlap_chunks = ints(v, w, 1);
        else if (name == "zero_stage") sp.zero_stage = ints_between(v, w, 0, 3);  // parallel.zero_stage's range
        else if (name == "shard_group") sp.shard_group = read_list<int>(v, w, shard_group_value);
        else if (name == "context_mode") sp.context_mode = names_of(v, w, parse_context_mode, context_mode_words());
        else if (name == "schedule") sp.schedule = names_of(v, w, parse_schedule, schedule_words());
        else if (name == "recompute") sp.recompute = names_of(v, w, parse_recompute, recompute_words());
        else if (name == "tensor_mode") sp.tensor_mode = names_of(v, w, parse_tensor_mode, tensor_mode_words());
        else if (name == "sequence_parallel") sp.sequence_parallel = read_list<bool>(v, w, parse_bool);
        else if (name == "max_gpus") sp.max_gpus = single_int(v, w, 1);
        else throw InputError(w, unknown_name_message("key", name, search_section_keys(), prefix));
    }
}

SearchScenario load_search_scenario(const std::string& path, const NameResolvers& names) {
    return load_search_scenario_text(read_text(path), path, names);
}

SearchScenario load_search_scenario_text(const std::string& text, const std::string& path, const NameResolvers& names) {
    // Parsed whole first, so that the search: section meets the same checks (duplicate keys, UTF-8)
    // as the rest, which the scenario loader reads with the section blanked out.
    const YAML::Node root = hw::load_yaml_document(text, path, "a scenario");
    SearchScenario s;
    int first = -1, last = std::numeric_limits<int>::max();
    if (root.IsMap())
        for (auto it = root.begin(); it != root.end(); ++it) {
            const int line = it->first.Mark().line;
            if (first >= 0 && line > first) last = std::min(last, line);
            if (it->first.IsScalar() && it->first.Scalar() == "search") {
                first = line;
                s.section = it->second;
            }
        }
    s.scenario = load_scenario_text(first >= 0 ? blank_lines(text, first, last) : text, path,
                                    std::filesystem::path(path).parent_path(), names);
    if (first >= 0) s.scenario.key_lines["search"] = first + 1;
    return s;
}

SearchSpace search_space_of(const SearchScenario& s) {
    SearchSpace space = default_search_space(s.scenario);
    if (s.section.IsDefined() && !s.section.IsNull())
        read_search_section(s.section, s.scenario.source_file, "search", space);
    return space;
}

}  // namespace cuboid::cli
