#include "strategies/cli/search_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
#define CUBOID_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUBOID_SANITIZED_ALLOCATOR 1
#endif
#endif
#ifndef CUBOID_SANITIZED_ALLOCATOR
#define CUBOID_SANITIZED_ALLOCATOR 0
#endif
#endif

namespace cuboid::cli {
namespace {

// What the workers of a phase and their watcher share: owned by both, so that workers a stop
// abandons (AbandonedWorkers) can finish on their own.
struct Watch {
    std::mutex mutex;
    std::condition_variable ended;
    int running = 0;
};

// Runs `worker` on `threads` threads while the calling thread calls `tick` every `interval_s`
// (and once they have all ended): the watcher that shows progress and polls the stop conditions.
// Once `stopped()` holds and `abandoned` is given, it returns after one more interval without
// waiting for workers still in a long simulation, and leaves them to `abandoned`.
void run_watched(int threads, const std::function<void()>& worker, const std::function<void()>& tick,
                 double interval_s, const std::function<bool()>& stopped, AbandonedWorkers* abandoned) {
    const auto watch = std::make_shared<Watch>();
    watch->running = std::max(threads, 1);
    std::vector<std::jthread> pool;
    for (int t = 0; t < std::max(threads, 1); ++t)
        pool.emplace_back([watch, worker] {
            worker();
            const std::lock_guard lock(watch->mutex);
            if (--watch->running == 0) watch->ended.notify_all();
        });
    int intervals_stopped = 0;
    {
        std::unique_lock lock(watch->mutex);
        const auto interval = std::chrono::duration<double>(interval_s);
        while (!watch->ended.wait_for(lock, interval, [&] { return watch->running == 0; })) {
            lock.unlock();
            tick();
            lock.lock();
            if (stopped() && abandoned && ++intervals_stopped > 1) break;
        }
    }
    if (abandoned && stopped()) {
        for (auto& t : pool) abandoned->threads.push_back(std::move(t));
        pool.clear();
    }
    pool.clear();  // joins
    tick();
}

void count_check(const CandidateCheck& c, SearchResult& r) {
    if (c.status == CandidateStatus::OutOfMemory) ++r.counts.pruned_memory;
    if (c.status == CandidateStatus::Invalid || c.status == CandidateStatus::Error) ++r.counts.invalid;
    if (c.status == CandidateStatus::Invalid && r.first_invalid.empty()) r.first_invalid = c.reason;
    if (c.status == CandidateStatus::Error && r.first_error.empty()) r.first_error = c.reason;
}

// The keep-th best of `times` (infinite until there are `keep` of them): a plan whose bound
// reaches it cannot enter the top `keep`.
double admission_time(std::vector<double> times, int keep) {
    const auto k = static_cast<std::size_t>(std::max(keep, 1));
    if (times.size() < k) return std::numeric_limits<double>::infinity();
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(k - 1), times.end());
    return times[k - 1];
}

// Seconds left at the rate so far: `remaining` items at `elapsed / done` each.
std::optional<double> estimate_left(std::size_t done, std::size_t remaining, double elapsed) {
    if (done == 0) return std::nullopt;
    return elapsed / static_cast<double>(done) * static_cast<double>(remaining);
}

// The simulation phase's state: plans in bound order, taken one at a time.
struct SimulationQueue {
    std::mutex mutex;
    std::size_t next = 0;                 // the next plan (index into the bound order)
    bool closed = false;                  // the next bound reached the admission time
    std::vector<double> ok_times;         // iteration times of the finished plans that fit
    std::vector<std::size_t> taken;       // plans taken, in the order taken
    std::vector<PointOutcome> outcomes;   // at the plan's position in `taken`
    std::atomic<std::size_t> finished{0};
    double busy_s = 0.0;                  // simulation seconds of the finished plans
};

}  // namespace

std::string search_progress_text(const SearchProgress& p) {
    std::string text = fmt::format("search: {}/{} bounded, {} simulated, {} pruned", p.bounded, p.candidates,
                                   p.simulated, p.pruned);
    if (p.best_s) text += fmt::format(", best {:.4g} s", *p.best_s);
    text += fmt::format(", {:.0f} s elapsed", p.elapsed_s);
    if (p.left_s) text += fmt::format(", ~{:.0f} s left{}", *p.left_s, p.simulating ? " at most" : " to bound");
    return text;
}

namespace {

// Everything the workers of one search touch besides what the caller owns (the scenario, names,
// hardware cache and stop): shared with workers a stop may abandon.
struct SearchState {
    SearchCandidates candidates;
    std::mutex check_mutex;
    std::vector<CandidateCheck> checks;   // written under check_mutex
    std::atomic<std::size_t> next_check{0};
    std::atomic<std::size_t> checked{0};
    std::vector<std::size_t> feasible;    // candidate indices in bound order, fixed before simulating
    SimulationQueue q;

    double bound_of(std::size_t k) const { return checks[feasible[k]].bound.total_s(); }
};

}  // namespace

SearchResult run_search(const Scenario& base, const SearchSpace& space, const NameResolvers& names,
                        HardwareCache& hardware, const SearchOptions& options) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto since_start = [start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const int threads = std::max(options.threads, 1);
    LongWorkStop* stop = options.stop;
    const auto stopped = [stop] { return stop && stop->stopped(); };
    SearchResult r;
    const auto st = std::make_shared<SearchState>();
    st->candidates = search_candidates(space, base);
    const auto share_size = static_cast<std::size_t>(std::max(options.share_size, 1));
    const auto share_rank = static_cast<std::size_t>(std::clamp(options.share_rank, 0, options.share_size - 1));
    // This share's candidates: share_rank, share_rank + share_size, ...
    const std::size_t all = st->candidates.points.size();
    r.counts.candidates = all > share_rank ? (all - share_rank + share_size - 1) / share_size : 0;
    SearchProgress progress;
    progress.candidates = r.counts.candidates;

    // Bound phase: validity, memory and the lower bound of every candidate.
    CandidateCheck unchecked;
    unchecked.status = CandidateStatus::NotChecked;
    st->checks.assign(st->candidates.points.size(), unchecked);
    const double headroom = options.memory_headroom;
    run_watched(
        threads,
        [st, &base, &names, &hardware, headroom, stopped, share_rank, share_size] {
            for (std::size_t k = st->next_check++, i = share_rank + k * share_size; i < st->checks.size() && !stopped();
                 k = st->next_check++, i = share_rank + k * share_size) {
                CandidateCheck c =
                    check_candidate(base, st->candidates.axes, st->candidates.points[i], names, hardware, headroom);
                const std::lock_guard lock(st->check_mutex);
                st->checks[i] = std::move(c);
                ++st->checked;
            }
        },
        [&] {
            if (stop) stop->poll();
            if (!options.progress) return;
            progress.bounded = st->checked.load();
            progress.elapsed_s = since_start();
            progress.left_s = estimate_left(progress.bounded, progress.candidates - progress.bounded, progress.elapsed_s);
            options.progress(progress);
        },
        options.progress_interval_s, stopped, options.abandoned);
    r.check_wall_s = since_start();
    {
        const std::lock_guard lock(st->check_mutex);
        for (std::size_t i = 0; i < st->checks.size(); ++i) {
            if (st->checks[i].status == CandidateStatus::NotChecked) continue;
            count_check(st->checks[i], r);
            if (st->checks[i].status == CandidateStatus::Feasible) st->feasible.push_back(i);
        }
        std::stable_sort(st->feasible.begin(), st->feasible.end(), [&](std::size_t a, std::size_t b) {
            return st->checks[a].bound.total_s() < st->checks[b].bound.total_s();
        });
    }

    // Simulation phase: the plans in bound order while their bound can still enter the top `keep`.
    SimulationQueue& q = st->q;
    q.outcomes.resize(st->feasible.size());
    const sim::Cancellation cancel(stop ? &stop->flag() : nullptr);
    // A plan's program build takes the cores the workers leave (as in run_points).
    const int build_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency() / threads));
    const int keep = options.keep;
    const bool exhaustive = options.exhaustive, fold = options.fold;
    const auto worker = [st, &base, &names, &hardware, stopped, cancel, build_threads, keep, exhaustive, fold,
                         headroom] {
        SimulationQueue& q = st->q;
        for (;;) {
            std::size_t slot = 0;
            {
                const std::lock_guard lock(q.mutex);
                if (q.closed || q.next >= st->feasible.size() || stopped()) return;
                const double admit =
                    exhaustive ? std::numeric_limits<double>::infinity() : admission_time(q.ok_times, keep);
                if (st->bound_of(q.next) >= admit) {
                    q.closed = true;  // the bounds only grow from here
                    return;
                }
                q.taken.push_back(q.next++);
                slot = q.taken.size() - 1;
            }
            const auto t0 = Clock::now();
            const std::size_t plan = st->feasible[q.taken[slot]];
            // Only the outcome is kept (the rows print its result and run JSON): the program and
            // the simulation's state are released when run_point returns.
            PointOutcome o = run_point(base, st->candidates.axes, st->candidates.points[plan], names, hardware, fold,
                                       build_threads, cancel, headroom);
#if defined(__GLIBC__) && !CUBOID_SANITIZED_ALLOCATOR
            // The plan's program and simulation state are freed by now; hand the pages back, so
            // that the process's memory is that of the plans in flight, not the high-water mark
            // of every plan so far spread over the allocator's arenas. (Under AddressSanitizer
            // malloc is ASan's, and glibc's trim would walk arenas it never set up.)
            malloc_trim(0);
#endif
            const std::lock_guard lock(q.mutex);
            if (o.status == PointStatus::Ok) q.ok_times.push_back(o.result->iteration_time_s);
            if (o.status != PointStatus::NotRun) q.busy_s += std::chrono::duration<double>(Clock::now() - t0).count();
            q.outcomes[slot] = std::move(o);
            ++q.finished;
        }
    };
    progress.simulating = true;
    run_watched(
        threads, worker,
        [&] {
            if (stop) stop->poll();
            if (!options.progress) return;
            const std::lock_guard lock(q.mutex);
            progress.bounded = st->checked.load();
            progress.simulated = q.finished.load();
            progress.pruned =
                r.counts.invalid + r.counts.pruned_memory + (q.closed ? st->feasible.size() - q.next : 0);
            if (!q.ok_times.empty()) progress.best_s = *std::min_element(q.ok_times.begin(), q.ok_times.end());
            progress.elapsed_s = since_start();
            // At most every plan below the admission time left, at the mean time per plan so far.
            const double admit = admission_time(q.ok_times, keep);
            std::size_t below = q.next;
            while (below < st->feasible.size() && st->bound_of(below) < admit) ++below;
            progress.left_s = q.finished ? std::optional<double>(q.busy_s / static_cast<double>(q.finished) *
                                                                 static_cast<double>(below - q.next) / threads)
                                         : std::nullopt;
            options.progress(progress);
        },
        options.progress_interval_s, stopped, options.abandoned);

    SweepResult& plans = r.plans;
    plans.name = base.name;
    plans.source_file = base.source_file;
    plans.axes = st->candidates.axes;
    plans.threads = threads;
    {
        // The plans in bound order (the order taken), those a stop abandoned left out.
        const std::lock_guard lock(q.mutex);
        std::vector<std::size_t> order(q.taken.size());
        for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return q.taken[a] < q.taken[b]; });
        for (const std::size_t k : order) {
            if (q.outcomes[k].status == PointStatus::NotRun) continue;
            plans.points.push_back(st->candidates.points[st->feasible[q.taken[k]]]);
            plans.outcomes.push_back(std::move(q.outcomes[k]));
            r.bound_s.push_back(st->bound_of(q.taken[k]));
            r.candidate.push_back(st->feasible[q.taken[k]]);
        }
    }
    r.counts.simulated = plans.points.size();
    if (stopped()) {
        plans.stopped = stop->reason();
        plans.interrupted_by = stop->signal();
        r.counts.not_reached = r.counts.candidates - r.counts.invalid - r.counts.pruned_memory - r.counts.simulated;
    } else {
        r.counts.pruned_bound = st->feasible.size() - r.counts.simulated;
    }
    plans.clusters = hardware.size();
    r.wall_s = since_start();
    plans.wall_s = r.wall_s;
    plans = ranked(std::move(plans));
    return r;
}

}  // namespace cuboid::cli
