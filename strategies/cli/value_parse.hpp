// Conversion of scenario values written as text (a YAML scalar or the right side of --set) into
// typed values, with errors that say what was expected and what was found.
#pragma once

#include <string>
#include <string_view>

#include "hardware_models/errors.hpp"

namespace cuboid::cli {

// Whole-string conversions; throw InputError at `where` ("expected an integer, got 'abc'").
int parse_int(std::string_view text, const InputLocation& where);
double parse_number(std::string_view text, const InputLocation& where);  // accepts 300e9
bool parse_bool(std::string_view text, const InputLocation& where);

// Range checks (inclusive); the message names the bound and the value.
int int_at_least(std::string_view text, const InputLocation& where, int min);
int int_between(std::string_view text, const InputLocation& where, int min, int max);
double number_at_least(std::string_view text, const InputLocation& where, double min);
double number_above(std::string_view text, const InputLocation& where, double bound);
double number_between(std::string_view text, const InputLocation& where, double min, double max);

}  // namespace cuboid::cli
