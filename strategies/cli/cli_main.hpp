// The command line: parses the arguments, runs the command, and turns every failure into a
// message on `err` and an exit code (0 ok, 1 internal error, 2 bad input, 3 out of memory).
// Nothing escapes as an exception.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace cuboid::cli {

// `args` excludes the program name.
int cuboid_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cuboid::cli
