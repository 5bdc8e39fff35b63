#include "strategies/cli/search_run.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "sim/parallel_for.hpp"

namespace cuboid::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<CandidateCheck> check_all(const Scenario& base, const SearchCandidates& c, const NameResolvers& names,
                                      HardwareCache& hardware, int threads, double memory_headroom) {
    std::vector<CandidateCheck> checks(c.points.size());
    sim::parallel_for(c.points.size(), threads, [&](std::size_t i) {
        checks[i] = check_candidate(base, c.axes, c.points[i], names, hardware, memory_headroom);
    });
    return checks;
}

void count_checks(const std::vector<CandidateCheck>& checks, SearchResult& r) {
    for (const auto& c : checks) {
        if (c.status == CandidateStatus::OutOfMemory) ++r.counts.pruned_memory;
        if (c.status == CandidateStatus::Invalid || c.status == CandidateStatus::Error) ++r.counts.invalid;
        if (c.status == CandidateStatus::Invalid && r.first_invalid.empty()) r.first_invalid = c.reason;
        if (c.status == CandidateStatus::Error && r.first_error.empty()) r.first_error = c.reason;
    }
}

// The keep-th best iteration time among the plans that ran and fit (infinite until there are
// `keep` of them): a plan whose bound reaches it cannot enter the top `keep`.
double admission_time(const std::vector<PointOutcome>& outcomes, int keep) {
    std::vector<double> times;
    for (const auto& o : outcomes)
        if (o.status == PointStatus::Ok) times.push_back(o.result->iteration_time_s);
    const auto k = static_cast<std::size_t>(std::max(keep, 1));
    if (times.size() < k) return std::numeric_limits<double>::infinity();
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(k - 1), times.end());
    return times[k - 1];
}

}  // namespace

SearchResult run_search(const Scenario& base, const SearchSpace& space, const NameResolvers& names,
                        HardwareCache& hardware, const SearchOptions& options) {
    const auto start = Clock::now();
    SearchResult r;
    const SearchCandidates candidates = search_candidates(space, base);
    r.counts.candidates = candidates.points.size();
    const std::vector<CandidateCheck> checks = check_all(base, candidates, names, hardware, options.threads, options.memory_headroom);
    r.check_wall_s = seconds_since(start);
    count_checks(checks, r);

    std::vector<std::size_t> feasible;
    for (std::size_t i = 0; i < checks.size(); ++i)
        if (checks[i].status == CandidateStatus::Feasible) feasible.push_back(i);
    std::stable_sort(feasible.begin(), feasible.end(), [&](std::size_t a, std::size_t b) {
        return checks[a].bound.total_s() < checks[b].bound.total_s();
    });

    SweepResult& plans = r.plans;
    plans.name = base.name;
    plans.source_file = base.source_file;
    plans.axes = candidates.axes;
    plans.threads = std::max(options.threads, 1);
    SweepRunOptions run_options;
    run_options.threads = plans.threads;
    run_options.fold = options.fold;
    run_options.memory_headroom = options.memory_headroom;
    // Batches of one plan per thread, in bound order: the admission time tightens between them.
    for (std::size_t next = 0; next < feasible.size();) {
        const double admit = options.exhaustive ? std::numeric_limits<double>::infinity()
                                                : admission_time(plans.outcomes, options.keep);
        if (checks[feasible[next]].bound.total_s() >= admit) break;
        std::vector<SweepPoint> batch;
        for (; next < feasible.size() && batch.size() < static_cast<std::size_t>(plans.threads); ++next) {
            if (checks[feasible[next]].bound.total_s() >= admit) break;
            batch.push_back(candidates.points[feasible[next]]);
            r.bound_s.push_back(checks[feasible[next]].bound.total_s());
        }
        auto outcomes = run_points(base, plans.axes, batch, names, hardware, run_options);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            plans.points.push_back(std::move(batch[i]));
            plans.outcomes.push_back(std::move(outcomes[i]));
        }
    }
    r.counts.simulated = plans.points.size();
    r.counts.pruned_bound = feasible.size() - r.counts.simulated;
    plans.clusters = hardware.size();
    r.wall_s = seconds_since(start);
    plans.wall_s = r.wall_s;
    plans = ranked(std::move(plans));
    return r;
}

}  // namespace cuboid::cli
