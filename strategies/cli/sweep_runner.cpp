#include "strategies/cli/sweep_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include "strategies/cli/error_location.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/scenario_loader.hpp"

namespace cuboid::cli {
namespace {

// The reason without the file and line (they would all point at the sweep: section), with the
// key that the validation blamed.
std::string invalid_reason(const InputError& e) {
    const std::string& key = e.where().key;
    return key.empty() ? bare_message(e) : key + ": " + bare_message(e);
}

PointOutcome simulate(const Scenario& s, HardwareCache& cache, bool fold, int build_threads,
                      const sim::Cancellation& cancel, double memory_headroom) {
    RunOptions options;
    options.memory_headroom = memory_headroom;
    options.cancel = cancel;
    options.hardware = cache.get(s.cluster);
    options.builtin_catalog = &cache.catalog();  // parsed once for the sweep, not once a point
    options.fold = fold;
    options.build_threads = build_threads;
    PointOutcome o;
    o.result = run_scenario(s, options);
    o.status = o.result->fits_in_memory ? PointStatus::Ok : PointStatus::OutOfMemory;
    o.run_json = result_json(s, *o.result);
    return o;
}

}  // namespace

std::string status_text(const PointOutcome& o) {
    switch (o.status) {
        case PointStatus::Ok: return "ok";
        case PointStatus::OutOfMemory: return "oom";
        case PointStatus::Invalid: return "invalid: " + o.reason;
        case PointStatus::Error: return "error: " + o.reason;
        case PointStatus::NotRun: return "not run";
    }
    return "error: unknown status";
}

PointOutcome run_point(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                       const NameResolvers& names, HardwareCache& hardware, bool fold, int build_threads,
                       const sim::Cancellation& cancel, double memory_headroom) {
    PointOutcome failed;
    try {
        const Scenario s = point_scenario(base, axes, point, names);
        check_complete(s);
        return simulate(s, hardware, fold, build_threads, cancel, memory_headroom);
    } catch (const sim::Cancelled&) {
        return PointOutcome{};  // NotRun: abandoned, as the caller asked
    } catch (const InputError& e) {
        failed.status = PointStatus::Invalid;
        failed.reason = invalid_reason(e);
    } catch (const std::exception& e) {
        failed.status = PointStatus::Error;
        failed.reason = e.what();
    } catch (...) {
        failed.status = PointStatus::Error;
        failed.reason = "unknown exception";
    }
    return failed;
}

namespace {

// What the workers share. They own it with the caller, and copies of the sweep's scenario, axes
// and points: abandoned workers outlive the call (AbandonedWorkers).
struct PointsRun {
    Scenario base;
    SweepAxes axes;
    std::vector<SweepPoint> points;
    std::vector<std::size_t> indices;            // the points to run, in this order
    std::vector<PointOutcome> outcomes;          // each index has one writer: its worker
    std::vector<std::atomic<bool>> finished;     // set (release) once outcomes[i] is written
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> settled{0};  // run, or skipped after a stop
    std::atomic<std::size_t> done{0};
    std::mutex mutex;
    std::condition_variable wake;  // every point settled
};

}  // namespace

std::vector<PointOutcome> run_points(const Scenario& base, const SweepAxes& axes,
                                     const std::vector<SweepPoint>& points, const NameResolvers& names,
                                     HardwareCache& hardware, const SweepRunOptions& options,
                                     AbandonedWorkers* abandoned) {
    const auto run = std::make_shared<PointsRun>();
    run->base = base;
    run->axes = axes;
    run->points = points;
    run->outcomes.resize(points.size());
    run->finished = std::vector<std::atomic<bool>>(points.size());
    run->indices.resize(points.size());
    std::iota(run->indices.begin(), run->indices.end(), std::size_t{0});
    if (options.only) run->indices = *options.only;
    const std::size_t total = run->indices.size();
    const sim::Cancellation cancel(options.stop);
    const auto stopped = [cancel] { return cancel.requested(); };

    const std::size_t workers = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(options.threads, 1)), 1,
                                                        std::max<std::size_t>(total, 1));
    // The workers share the cores: a point's program build takes what they leave, so that
    // points do not start threads that only contend with the other workers.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int build_threads = static_cast<int>(std::max<std::size_t>(1, cores / workers));
    const bool fold = options.fold;
    const double headroom = options.memory_headroom;
    auto worker = [run, &names, &hardware, fold, build_threads, cancel, stopped, total, headroom] {
        for (std::size_t k = run->next++; k < total; k = run->next++) {
            const std::size_t i = run->indices[k];
            if (!stopped()) {
                PointOutcome o = run_point(run->base, run->axes, run->points[i], names, hardware, fold, build_threads,
                                           cancel, headroom);
                if (o.status != PointStatus::NotRun) {
                    run->outcomes[i] = std::move(o);
                    run->finished[i].store(true, std::memory_order_release);
                    ++run->done;
                }
            }
            if (++run->settled == total) {
                const std::lock_guard lock(run->mutex);
                run->wake.notify_all();
            }
        }
    };
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < workers; ++t) threads.emplace_back(worker);

    const auto interval = std::chrono::duration<double>(options.progress_interval_s);
    std::unique_lock lock(run->mutex);
    const auto all_settled = [&] { return run->settled.load() == total; };
    while (!run->wake.wait_for(lock, interval, all_settled)) {
        if (stopped() && abandoned) break;
        if (options.progress && !stopped()) options.progress(run->done.load(), total);
    }
    lock.unlock();
    if (!all_settled() && abandoned) {
        // Stopped: the points finished are kept; those in progress are left to their workers.
        std::vector<PointOutcome> kept(points.size());
        for (const std::size_t i : run->indices)
            if (run->finished[i].load(std::memory_order_acquire)) kept[i] = run->outcomes[i];
        abandoned->threads = std::move(threads);
        if (options.progress) options.progress(total, total);  // ends the line, as below
        return kept;
    }
    threads.clear();  // joins
    if (options.progress) options.progress(total, total);
    return std::move(run->outcomes);
}

}  // namespace cuboid::cli
