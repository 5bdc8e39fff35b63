#include "strategies/cli/sweep_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
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

PointOutcome simulate(const Scenario& s, HardwareCache& cache, bool fold, int build_threads) {
    RunOptions options;
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
                       const NameResolvers& names, HardwareCache& hardware, bool fold, int build_threads) {
    PointOutcome failed;
    try {
        const Scenario s = point_scenario(base, axes, point, names);
        check_complete(s);
        return simulate(s, hardware, fold, build_threads);
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

std::vector<PointOutcome> run_points(const Scenario& base, const SweepAxes& axes,
                                     const std::vector<SweepPoint>& points, const NameResolvers& names,
                                     HardwareCache& hardware, const SweepRunOptions& options) {
    std::vector<PointOutcome> outcomes(points.size());
    std::vector<std::size_t> indices(points.size());
    std::iota(indices.begin(), indices.end(), std::size_t{0});
    if (options.only) indices = *options.only;
    const std::size_t total = indices.size();
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> settled{0};  // run, or skipped after a stop
    std::atomic<std::size_t> done{0};
    std::mutex mutex;
    std::condition_variable finished;
    const auto stopped = [&] { return options.stop && options.stop->load() != 0; };

    const std::size_t workers = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(options.threads, 1)), 1,
                                                        std::max<std::size_t>(total, 1));
    // The workers share the cores: a point's program build takes what they leave, so that
    // points do not start threads that only contend with the other workers.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int build_threads = static_cast<int>(std::max<std::size_t>(1, cores / workers));
    auto worker = [&] {
        for (std::size_t k = next++; k < total; k = next++) {
            const std::size_t i = indices[k];
            if (!stopped()) {
                outcomes[i] = run_point(base, axes, points[i], names, hardware, options.fold,
                                        build_threads);  // each index has one writer
                ++done;
            }
            if (++settled == total) {
                const std::lock_guard lock(mutex);
                finished.notify_all();
            }
        }
    };
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < workers; ++t) threads.emplace_back(worker);

    const auto interval = std::chrono::duration<double>(options.progress_interval_s);
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, interval, [&] { return settled.load() == total; }))
        if (options.progress && !stopped()) options.progress(done.load(), total);
    lock.unlock();
    threads.clear();  // joins
    if (options.progress) options.progress(total, total);
    return outcomes;
}

}  // namespace cuboid::cli
