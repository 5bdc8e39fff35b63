#include "strategies/scenario.hpp"

namespace cuboid {

InputLocation Scenario::where(const std::string& key) const {
    const auto it = key_lines.find(key);
    return InputLocation{source_file, it == key_lines.end() ? 0 : it->second, key};
}

// The to_string of the scenario's pluggable kinds read their descriptor tables (names.cpp).
std::string to_string(AttentionKind k) { return k == AttentionKind::Mla ? "mla" : "mha"; }

}  // namespace cuboid
