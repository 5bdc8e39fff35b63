#include "strategies/cli/error_location.hpp"

#include <string>

namespace cuboid::cli {

std::string bare_message(const InputError& e) {
    const std::string full = e.what();
    const std::string prefix = InputError::format(e.where(), "");
    if (full.compare(0, prefix.size(), prefix) == 0) return full.substr(prefix.size());
    return full;
}

InputError relocated(const InputError& e, const InputLocation& where) {
    return InputError(where, bare_message(e));
}

InputError with_location_if_missing(const InputError& e, const InputLocation& where) {
    if (!e.where().file.empty()) return e;
    InputLocation w = where;
    if (w.key.empty()) w.key = e.where().key;
    return relocated(e, w);
}

}  // namespace cuboid::cli
