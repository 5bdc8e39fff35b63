// A `cuboid search` scenario (docs/search.md): the scenario with its `search:` section, the space
// it gives, and, on a small cluster, the candidates enumerated and the first few checked as the
// search checks them (program built, memory walked, bound priced). Bad input must come back as
// InputError (exit 2); a candidate the plan validation refuses is a result (counted invalid).
#include <algorithm>
#include <cstdint>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/search_evaluate.hpp"
#include "strategies/cli/sweep_hardware_cache.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// Candidates are enumerated on small clusters only, and few of them checked, so that an input
// runs in milliseconds (a 100,000-GPU cluster's full space has tens of thousands of plans).
constexpr std::int64_t kLargestCluster = 64;
constexpr std::size_t kCheckedCandidates = 4;
constexpr double kLargestSpace = 1e5;  // the product of the lists' lengths

double space_size(const cuboid::cli::SearchSpace& sp) {
    double n = 1.0;
    for (const std::size_t length :
         {sp.tensor.size(), sp.pipeline.size(), sp.micro_batch.size(), sp.schedule.size(), sp.virtual_stages.size(),
          sp.recompute.size(), sp.tensor_mode.size(), sp.overlap_chunks.size(), sp.sequence_parallel.size(),
          sp.zero_stage.size(), sp.context.size(), sp.context_mode.size(), std::max<std::size_t>(1, sp.expert.size()),
          std::max<std::size_t>(1, sp.expert_tensor.size()), sp.shard_group.size()})
        n *= static_cast<double>(length);
    return n;
}

bool small_enough_to_check(const cuboid::Scenario& s) {
    const std::int64_t gpus = std::int64_t{s.cluster.nodes} * s.cluster.gpus_per_node;
    return gpus >= 1 && gpus <= kLargestCluster && s.cluster.nics_per_node <= 16 && s.model.layers <= 8 &&
           s.training.global_batch <= 64 && !s.cluster.profile;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto catalog = cuboid::cli::parse_builtin_catalog();
    static const cuboid::cli::NameResolvers names = cuboid::cli::builtin_name_resolvers(catalog);
    try {
        // A folder that does not exist: a relative cluster.profile is refused, not read.
        const cuboid::cli::SearchScenario s = cuboid::cli::load_search_scenario_text(
            cuboid::fuzz::as_text(data, size), "/nonexistent-fuzz-dir/fuzz.yaml", names);
        const cuboid::cli::SearchSpace space = cuboid::cli::search_space_of(s);
        const cuboid::Scenario base = cuboid::cli::limited_to_max_gpus(s.scenario, space);
        if (!small_enough_to_check(base) || space_size(space) > kLargestSpace) return 0;
        const cuboid::cli::SearchCandidates c = cuboid::cli::search_candidates(space, base);
        cuboid::cli::HardwareCache hardware(*catalog);
        for (std::size_t i = 0; i < std::min(c.points.size(), kCheckedCandidates); ++i) {
            const cuboid::cli::CandidateCheck check =
                cuboid::cli::check_candidate(base, c.axes, c.points[i], names, hardware);
            // check_candidate never throws: an internal error comes back as status Error.
            if (check.status == cuboid::cli::CandidateStatus::Error)
                cuboid::fuzz::internal_error("fuzz_search_scenario", std::runtime_error(check.reason));
        }
    } catch (const cuboid::InputError&) {
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_search_scenario", e);
    }
    return 0;
}
