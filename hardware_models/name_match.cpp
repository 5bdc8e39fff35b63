#include "hardware_models/name_match.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace cuboid {
namespace {

// Lower case, letters and digits only: "H100 SXM", "h100_sxm" and "h100-sxm" read alike.
std::string folded(std::string_view s) {
    std::string out;
    for (const unsigned char c : s)
        if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
    return out;
}

// A prefix this long names a model on its own ("h100-sxm" for h100-sxm-80gb).
constexpr std::size_t kMinPrefix = 3;

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Two rows of the dynamic-programming table.
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::optional<std::string> closest_name(std::string_view given, std::span<const std::string> allowed) {
    const std::string wanted = folded(given);
    for (const auto& name : allowed)
        if (folded(name) == wanted) return name;
    // The shortest name that starts with what was given.
    std::optional<std::string> best;
    if (wanted.size() >= kMinPrefix)
        for (const auto& name : allowed)
            if (folded(name).starts_with(wanted) && (!best || name.size() < best->size())) best = name;
    if (best) return best;
    std::size_t best_distance = 0;
    for (const auto& name : allowed) {
        const std::size_t d = edit_distance(wanted, folded(name));
        const std::size_t tolerated = std::max<std::size_t>(2, std::max(given.size(), name.size()) / 3);
        if (d <= tolerated && (!best || d < best_distance)) {
            best = name;
            best_distance = d;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view given, std::span<const std::string> allowed) {
    const auto near = closest_name(given, allowed);
    return near ? " (did you mean '" + *near + "'?)" : std::string();
}

}  // namespace cuboid
