#include "calibrate/fit/gpu_names.hpp"

#include <algorithm>
#include <cctype>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"

namespace cuboid::calibrate {
namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// A catalog alias for the device, before checking that the catalog has it.
std::optional<std::string> alias_of(const std::string& n, double memory_bytes) {
    if (has(n, "pcie") || has(n, "nvl")) return std::nullopt;
    const double gib = memory_bytes / 1073741824.0;
    if (has(n, "a100")) return gib > 60.0 ? "a100-80gb" : "a100-40gb";
    for (const char* part : {"h100", "h200", "b200", "v100", "mi300x"})
        if (has(n, part)) return std::string(part);
    return std::nullopt;
}

}  // namespace

std::optional<std::string> catalog_gpu_name(const std::string& name, double memory_bytes) {
    const auto alias = alias_of(lower(name), memory_bytes);
    if (!alias) return std::nullopt;
    try {
        return hw::Catalog::load_builtin().gpu(*alias).name;
    } catch (const InputError&) {
        return std::nullopt;
    }
}

}  // namespace cuboid::calibrate
