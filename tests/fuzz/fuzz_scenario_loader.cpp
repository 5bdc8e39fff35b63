// The scenario loader on arbitrary bytes as a scenario file: read, every key checked, then the
// completeness check the commands make. Bad input must come back as InputError (exit 2).
#include <cstdint>

#include "hardware_models/errors.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Parsed once: the catalog is not what this harness explores.
    static const cuboid::cli::NameResolvers names = cuboid::cli::builtin_name_resolvers();
    try {
        // A folder that does not exist: a relative cluster.profile is refused, not read.
        const cuboid::Scenario s =
            cuboid::cli::load_scenario_text(cuboid::fuzz::as_text(data, size), "fuzz.yaml", "/nonexistent-fuzz-dir", names);
        cuboid::cli::check_complete(s);
    } catch (const cuboid::InputError&) {
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_scenario_loader", e);
    }
    return 0;
}
