// A scenario file end to end on a small cluster: load, check, and, when the plan is small enough
// to simulate in milliseconds, run_scenario and the JSON result. Bad input must come back as
// InputError (exit 2); a plan that does not fit in memory is a result, not an error.
#include <cstdint>

#include "hardware_models/errors.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/run.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// Few ranks, layers and micro-batches: an input runs in milliseconds, so the fuzzer explores
// plans rather than waiting on one. The products are taken in 64 bits, before any of the
// simulator's own arithmetic, so that a huge value is skipped here and not overflowed.
bool small_enough_to_simulate(const cuboid::Scenario& s) {
    const std::int64_t gpus = std::int64_t{s.cluster.nodes} * s.cluster.gpus_per_node;
    const bool small_cluster = gpus >= 1 && gpus <= 16 && s.cluster.nics_per_node <= 16;
    const bool small_model = s.model.layers <= 8 && s.parallel.virtual_stages <= 4;
    const bool few_micro_batches = s.training.micro_batch >= 1 && s.training.global_batch <= 64;
    // A profile is read from disk at run time: the profile loader has its own harness.
    return small_cluster && small_model && few_micro_batches && !s.cluster.profile;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto catalog = cuboid::cli::parse_builtin_catalog();
    static const cuboid::cli::NameResolvers names = cuboid::cli::builtin_name_resolvers(catalog);
    try {
        const cuboid::Scenario s =
            cuboid::cli::load_scenario_text(cuboid::fuzz::as_text(data, size), "fuzz.yaml", "/nonexistent-fuzz-dir", names);
        cuboid::cli::check_complete(s);
        if (!small_enough_to_simulate(s)) return 0;
        cuboid::RunOptions options;
        options.builtin_catalog = catalog.get();
        options.build_threads = 1;
        options.fold = size % 2 == 1;  // both the folded and the full simulation
        const cuboid::RunResult r = cuboid::run_scenario(s, options);
        (void)cuboid::cli::result_json(s, r).dump(2);
    } catch (const cuboid::InputError&) {
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_run_scenario", e);
    }
    return 0;
}
