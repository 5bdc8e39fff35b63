// Attaching a location to an InputError thrown by code that did not know it (a catalog lookup
// knows the GPU name but not the file and line where the user wrote it).
#pragma once

#include "hardware_models/errors.hpp"

namespace cuboid::cli {

// The message without its "file:line: 'key': " prefix.
std::string bare_message(const InputError& e);

// The same error at `where`.
InputError relocated(const InputError& e, const InputLocation& where);

// `e` at `where` when `e` names no file (the file of `e` wins when it has one: it is more precise).
InputError with_location_if_missing(const InputError& e, const InputLocation& where);

}  // namespace cuboid::cli
