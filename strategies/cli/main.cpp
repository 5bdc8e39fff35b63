// The `cuboid` executable: see cli_main.hpp and docs/scenario.md.
#include <iostream>
#include <string>
#include <vector>

#include "strategies/cli/allocator_settings.hpp"
#include "strategies/cli/cli_main.hpp"

int main(int argc, char** argv) {
    cuboid::cli::restart_with_huge_pages(argv);
    cuboid::cli::keep_freed_memory_for_reuse();
    const std::vector<std::string> args(argv + 1, argv + argc);
    return cuboid::cli::cuboid_main(args, std::cout, std::cerr);
}
