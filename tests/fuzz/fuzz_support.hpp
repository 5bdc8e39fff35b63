// What every harness shares: the rule that an input may be refused only as bad input. Any other
// exception is what the command-line tools report as "internal error (please report)", so the
// harness stops there and libFuzzer keeps the input as a crash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace cuboid::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

[[noreturn]] inline void internal_error(const char* harness, const std::exception& e) {
    std::fprintf(stderr, "%s: internal error on this input (an input must be refused as bad input): %s\n", harness,
                 e.what());
    std::abort();
}

}  // namespace cuboid::fuzz
