#include "strategies/cli/overrides.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "hardware_models/yaml_text.hpp"
#include "strategies/cli/suggest.hpp"

namespace cuboid::cli {
namespace {

InputLocation set_at(const std::string& key) { return {std::string(kOverrideFile), 0, key}; }

std::string trimmed(std::string_view s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t");
    return std::string(s.substr(first, last - first + 1));
}

// The keys of the section the user aimed at, in full, else every settable key.
std::vector<std::string> candidates_for(const std::string& key) {
    const auto dot = key.rfind('.');
    const std::string section = dot == std::string::npos ? "" : key.substr(0, dot);
    if (section.empty() || !is_section(section)) return settable_keys();
    std::vector<std::string> out;
    for (const auto& child : allowed_children(section)) {
        const std::string full = section + "." + child;
        if (const KeyDef* def = find_key(full); def && def->set) out.push_back(full);
    }
    return out.empty() ? settable_keys() : out;
}

}  // namespace

Override parse_override(std::string_view assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string_view::npos || trimmed(assignment.substr(0, eq)).empty())
        throw InputError(set_at(std::string(assignment)),
                         "expected KEY=VALUE with a dotted key, such as parallel.tensor=8");
    return {trimmed(assignment.substr(0, eq)), trimmed(assignment.substr(eq + 1))};
}

void apply_override(Scenario& s, const Override& o, const NameResolvers& names) {
    const KeyDef* def = find_key(o.key);
    if (!def) throw InputError(set_at(o.key), unknown_name_message("key", o.key, candidates_for(o.key)));
    if (!def->set)
        throw InputError(set_at(o.key), "holds several values and cannot be set with --set; edit the file");
    hw::check_utf8(o.value, set_at(o.key));  // the value may reach a JSON or CSV output
    def->set(s, o.value, set_at(o.key), SetContext{names, {}});
}

std::vector<std::string> apply_overrides(Scenario& s, std::span<const std::string> assignments,
                                         const NameResolvers& names) {
    std::vector<Override> parsed;
    for (const auto& a : assignments) parsed.push_back(parse_override(a));
    std::stable_partition(parsed.begin(), parsed.end(), [](const Override& o) { return replaces_model(o.key); });
    std::vector<std::string> keys;
    for (const auto& o : parsed) {
        apply_override(s, o, names);
        keys.push_back(o.key);
    }
    return keys;
}

}  // namespace cuboid::cli
