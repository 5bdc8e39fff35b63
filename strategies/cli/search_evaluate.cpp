#include "strategies/cli/search_evaluate.hpp"

#include <algorithm>

#include "sim/memory.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/program_builder.hpp"

namespace cuboid::cli {
namespace {

double program_peak_bytes(const sim::Program& program) {
    double peak = 0.0;
    for (const auto& list : program.op_lists) peak = std::max(peak, sim::peak_memory(list).peak.value);
    return peak;
}

CandidateCheck check(const Scenario& s, HardwareCache& cache) {
    const Layout layout = validate_plan(s, cache.catalog());  // the built-in catalog, parsed once
    const auto hardware = cache.get(s.cluster);
    const Bytes capacity = hardware->gpu().memory_capacity;
    // The same program run_scenario builds, so the memory verdict is the simulation's.
    const std::vector<int> checkpointed = checkpointed_layers(s, layout, BuildOptions{capacity});
    const sim::Program program = build_program_checkpointing(s, layout, checkpointed);
    CandidateCheck c;
    c.peak_memory_bytes = program_peak_bytes(program);
    if (c.peak_memory_bytes > capacity.value) {
        c.status = CandidateStatus::OutOfMemory;
        return c;
    }
    c.bound = iteration_lower_bound(program, hardware->price(program), layout);
    c.status = CandidateStatus::Feasible;
    return c;
}

}  // namespace

CandidateCheck check_candidate(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                               const NameResolvers& names, HardwareCache& hardware) {
    CandidateCheck failed;
    try {
        return check(point_scenario(base, axes, point, names), hardware);
    } catch (const InputError& e) {
        failed.status = CandidateStatus::Invalid;
        const std::string& key = e.where().key;
        failed.reason = key.empty() ? bare_message(e) : key + ": " + bare_message(e);
    } catch (const std::exception& e) {
        failed.reason = e.what();
    }
    return failed;
}

}  // namespace cuboid::cli
