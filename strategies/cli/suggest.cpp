#include "strategies/cli/suggest.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace cuboid::cli {

std::optional<std::string> closest(std::string_view given, std::span<const std::string> allowed) {
    return closest_name(given, allowed);
}

std::string join(std::span<const std::string> names, std::string_view separator) {
    std::string out;
    for (const auto& n : names) {
        if (!out.empty()) out += separator;
        out += n;
    }
    return out;
}

std::string unknown_name_message(std::string_view what, std::string_view given,
                                 std::span<const std::string> allowed, std::string_view section) {
    const std::string in = section.empty() ? std::string() : fmt::format(" in '{}'", section);
    std::string msg = fmt::format("unknown {} '{}'{}; allowed: {}", what, given, in, join(allowed));
    return msg + did_you_mean(given, allowed);
}

}  // namespace cuboid::cli
