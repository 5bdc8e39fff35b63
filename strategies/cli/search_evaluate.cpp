#include "strategies/cli/search_evaluate.hpp"

#include "hardware_models/collectives.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/memory_check.hpp"
#include "strategies/run_figures.hpp"

namespace cuboid::cli {
namespace {

// The uncontended time of the very plan the simulation will run for a collective (the shared plan
// cache of the hardware model, profile applied), a little under it: the simulator rounds each
// flow's end to its clock, and the bound must stay below what it computes, not merely equal it.
CollectiveLowerBound collective_lower_bound(const hw::Hardware& hardware, const sim::Program& program) {
    return [&hardware, &program](sim::OpKind kind, Bytes bytes, std::uint32_t group) {
        const hw::CollectiveModel& model = hardware.collectives();
        const auto plan = model.shared_plan(kind, bytes, program.groups[group].ranks, 0);
        const Time uncontended = model.closed_form(*plan);
        const auto slack = static_cast<std::int64_t>(plan->phases.size()) + uncontended.value / 1'000'000;
        return Time(std::max<std::int64_t>(0, uncontended.value - slack));
    };
}

CandidateCheck check(const Scenario& s, HardwareCache& cache, double headroom) {
    const Layout layout = validate_plan(s, cache.catalog());  // the built-in catalog, parsed once
    const auto hardware = cache.get(s.cluster);
    // The same program run_scenario builds, so the memory verdict is the simulation's.
    const MemoryCheck memory = check_memory(s, layout, usable_memory(hardware->gpu(), headroom));
    CandidateCheck c;
    c.peak_memory_bytes = memory.peak_bytes;
    if (!memory.fits) {
        c.status = CandidateStatus::OutOfMemory;
        return c;
    }
    c.bound = iteration_lower_bound(memory.program, hardware->price(memory.program), layout,
                                    collective_lower_bound(*hardware, memory.program));
    c.status = CandidateStatus::Feasible;
    return c;
}

}  // namespace

CandidateCheck check_candidate(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                               const NameResolvers& names, HardwareCache& hardware, double memory_headroom) {
    CandidateCheck failed;
    try {
        return check(point_scenario(base, axes, point, names), hardware, memory_headroom);
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
