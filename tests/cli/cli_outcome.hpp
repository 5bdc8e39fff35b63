// What a cuboid command printed and returned, for the command-line tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "strategies/cli/cli_main.hpp"

namespace cuboid::cli::test {

struct Outcome {
    int code = -1;
    std::string out;
    std::string err;
};

// Runs the command line in-process (the same entry point as the binary's main).
inline Outcome run_cli(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    Outcome o;
    o.code = cuboid_main(args, out, err);
    o.out = out.str();
    o.err = err.str();
    return o;
}

}  // namespace cuboid::cli::test
