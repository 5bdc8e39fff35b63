// Runs every point of a sweep, on several threads, and keeps each point's outcome at its index:
// the outcomes do not depend on the thread count or on which thread ran what.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "strategies/cli/sweep_hardware_cache.hpp"
#include "strategies/cli/sweep_points.hpp"
#include "strategies/run.hpp"

namespace cuboid::cli {

// Ok and OutOfMemory points ran; Invalid is a plan the strategies reject (an InputError);
// Error is anything else that went wrong in one point (a bug), recorded instead of ending the sweep;
// NotRun is a point the sweep never reached (stopped by a signal, or its MPI rank failed).
enum class PointStatus { Ok, OutOfMemory, Invalid, Error, NotRun };

struct PointOutcome {
    PointStatus status = PointStatus::NotRun;
    std::string reason;                // Invalid and Error: what went wrong
    std::optional<RunResult> result;   // Ok and OutOfMemory
    nlohmann::ordered_json run_json;   // the `run` JSON of the point (Ok and OutOfMemory)
};

// "ok", "oom", "invalid: REASON", "error: MESSAGE", "not run".
std::string status_text(const PointOutcome& o);

// One point: its scenario, its cluster's hardware from the cache, the simulation (symmetry-folded
// when `fold`: the same results, faster; RunOptions::fold). Never throws.
// `build_threads`: threads that build the point's program (RunOptions::build_threads).
// `cancel`, once requested, abandons the point within milliseconds: its outcome is NotRun.
// `memory_headroom`: the fraction of GPU memory a point must leave free to fit (RunOptions).
PointOutcome run_point(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                       const NameResolvers& names, HardwareCache& hardware, bool fold = true,
                       int build_threads = 0, const sim::Cancellation& cancel = {}, double memory_headroom = 0.0);

// Called on the calling thread, at most every `interval_s` and once at the end.
using ProgressCallback = std::function<void(std::size_t done, std::size_t total)>;

struct SweepRunOptions {
    int threads = 1;
    ProgressCallback progress;       // empty: none
    double progress_interval_s = 0.1;
    // Non-null: once it holds a non-zero value (a signal number), workers take no new point and
    // abandon the points in progress (sim::Cancellation); the points not finished stay NotRun.
    // Under mpirun the rank has about a second before it is killed: no point may keep it.
    const std::atomic<int>* stop = nullptr;
    // The indices to run, in this order (an MPI rank's share, possibly none); unset: every point.
    std::optional<std::vector<std::size_t>> only;
    bool fold = true;  // symmetry-folded simulation (RunOptions::fold); false: every rank simulated
    double memory_headroom = 0.0;  // RunOptions::memory_headroom of every point
};

// Workers still finishing points that a stop abandoned (run_points): they read the names and
// the hardware cache they were given until they end, so whoever holds this object declares it
// after those; destroying it joins them.
struct AbandonedWorkers {
    std::vector<std::jthread> threads;
};

// Runs the points on `threads` workers that take the next index from a shared counter. The
// outcomes of points not run (not in `only`, or after a stop) are NotRun. Each point builds its
// program on the cores the workers leave (one thread each when there are as many workers as cores).
// With `abandoned` non-null, a stop returns at once with the points finished so far and leaves
// the workers still in a point to `abandoned`, instead of waiting for them: under mpirun a rank
// has about a second from SIGTERM to SIGKILL, less than a point may take to build.
std::vector<PointOutcome> run_points(const Scenario& base, const SweepAxes& axes,
                                     const std::vector<SweepPoint>& points, const NameResolvers& names,
                                     HardwareCache& hardware, const SweepRunOptions& options,
                                     AbandonedWorkers* abandoned = nullptr);

}  // namespace cuboid::cli
