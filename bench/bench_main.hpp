// What the benchmarks' main functions share: bad arguments print the usage line and exit 2,
// any other error prints "error: ..." and exits 1.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace cuboid::bench {

// Runs `body`; an std::invalid_argument (its message, if any, then the usage) gives 2.
template <class Body>
int run_main(const char* usage, Body&& body) {
    try {
        body();
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        fmt::print(stderr, "{}usage: {}\n", what.empty() ? "" : what + "\n", usage);
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace cuboid::bench
