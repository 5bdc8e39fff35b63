#include "strategies/cli/value_parse.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace cuboid::cli {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

[[noreturn]] void expected(const char* what, std::string_view text, const InputLocation& where) {
    if (trim(text).empty()) throw InputError(where, fmt::format("expected {}, got nothing", what));
    throw InputError(where, fmt::format("expected {}, got '{}'", what, text));
}

// A '+' sign is valid in YAML numbers but not for from_chars.
std::string_view drop_plus(std::string_view s) {
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    return s;
}

}  // namespace

int parse_int(std::string_view text, const InputLocation& where) {
    const std::string_view s = drop_plus(trim(text));
    int value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc::result_out_of_range)
        throw InputError(where, fmt::format("'{}' is out of the range of an integer", text));
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) expected("an integer", text, where);
    return value;
}

double parse_number(std::string_view text, const InputLocation& where) {
    const std::string_view s = drop_plus(trim(text));
    double value = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty() || !std::isfinite(value))
        expected("a number (such as 200, 1.5 or 300e9)", text, where);
    return value;
}

bool parse_bool(std::string_view text, const InputLocation& where) {
    // The YAML 1.1 spellings that yaml-cpp itself accepts, so a file means the same either way.
    const std::string s = lower(trim(text));
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    expected("true or false", text, where);
}

int int_at_least(std::string_view text, const InputLocation& where, int min) {
    const int v = parse_int(text, where);
    if (v < min) throw InputError(where, fmt::format("must be >= {}, got {}", min, v));
    return v;
}

int int_between(std::string_view text, const InputLocation& where, int min, int max) {
    const int v = parse_int(text, where);
    if (v < min || v > max)
        throw InputError(where, fmt::format("must be between {} and {}, got {}", min, max, v));
    return v;
}

double number_at_least(std::string_view text, const InputLocation& where, double min) {
    const double v = parse_number(text, where);
    if (v < min) throw InputError(where, fmt::format("must be >= {}, got {}", min, v));
    return v;
}

double number_above(std::string_view text, const InputLocation& where, double bound) {
    const double v = parse_number(text, where);
    if (v <= bound) throw InputError(where, fmt::format("must be > {}, got {}", bound, v));
    return v;
}

double number_between(std::string_view text, const InputLocation& where, double min, double max) {
    const double v = parse_number(text, where);
    if (v < min || v > max) throw InputError(where, fmt::format("must be between {} and {}, got {}", min, max, v));
    return v;
}

}  // namespace cuboid::cli
