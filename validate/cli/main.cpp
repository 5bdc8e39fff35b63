// The `cuboid-validate` executable: see validate_main.hpp and docs/validation.md.
#include <iostream>
#include <string>
#include <vector>

#include "validate/cli/validate_main.hpp"

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    return cuboid::validate::validate_main(args, std::cout, std::cerr);
}
