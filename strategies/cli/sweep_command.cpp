#include "strategies/cli/sweep_command.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/html_report.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/rank_outcome.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/sweep_interrupt.hpp"
#include "strategies/cli/sweep_mpi.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "strategies/cli/sweep_progress.hpp"
#include "strategies/cli/sweep_table.hpp"

namespace cuboid::cli {
namespace {

Scenario base_scenario(const SweepRequest& request, const NameResolvers& names) {
    Scenario s = load_scenario_file(request.scenario_path, names);
    s.limits = request.limits;
    if (s.sweep.empty())
        throw InputError({request.scenario_path, 0, "sweep"},
                         "the scenario has no sweep: section; use cuboid run for a single plan, or add a "
                         "sweep: map of dotted keys to lists (docs/scenario.md)");
    reject_swept_overrides(s.sweep, apply_overrides(s, request.sets, names));
    check_no_ignored_keys(s);
    return s;
}

void check_request(const SweepRequest& r) {
    if (r.threads && *r.threads < 1)
        throw InputError({"", 0, "--threads"}, fmt::format("expected an integer >= 1, got {}", *r.threads));
    if (r.top && *r.top < 1) throw InputError({"", 0, "--top"}, fmt::format("expected an integer >= 1, got {}", *r.top));
    check_memory_headroom(r.memory_headroom);
    if (r.csv && r.json && *r.csv == "-" && *r.json == "-")
        throw InputError({"", 0, "--csv"}, "--csv - and --json - both want standard output; send one to a file");
    check_html_path(r.html);
}

int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Fault injection for the test of a failing rank: CUBOID_SWEEP_FAIL_RANK=R makes rank R throw
// after its first point, as a rank that breaks part-way would.
std::optional<int> injected_failure_rank() {
    const char* v = std::getenv("CUBOID_SWEEP_FAIL_RANK");
    if (!v || !*v) return std::nullopt;
    return std::atoi(v);
}

// The sweep before any point ran: its points, all NotRun.
SweepResult prepared(const Scenario& base, const SweepRequest& request) {
    SweepResult r;
    r.name = base.name;
    r.source_file = base.source_file;
    r.axes = base.sweep;
    check_sweep_size(base);
    r.points = sweep_points(r.axes);
    r.outcomes.resize(r.points.size());
    r.threads = request.threads.value_or(default_threads());
    return r;
}

// What a share's points read, and the workers still in points that a signal abandoned: declared
// last, the workers are joined before what they read goes, after the outputs are written.
// `catalog`: the built-in one, parsed once per run (a parse costs as much as setting up a point).
struct ShareContext {
    explicit ShareContext(std::shared_ptr<const hw::Catalog> built_in)
        : catalog(std::move(built_in)), names(builtin_name_resolvers(catalog)), cache(*catalog) {}
    std::shared_ptr<const hw::Catalog> catalog;
    NameResolvers names;
    HardwareCache cache;
    AbandonedWorkers abandoned;
};

// Runs this process's share of the points (every point without MPI) into a share for rank 0.
SweepShare run_share(const Scenario& base, const SweepResult& r, const SweepRequest& request, std::ostream& err,
                     const SweepInterrupt& interrupt, int rank, int ranks, std::size_t& clusters,
                     ShareContext& context) {
    const NameResolvers& names = context.names;
    HardwareCache& cache = context.cache;
    SweepProgress progress(err);
    SweepRunOptions options;
    options.threads = r.threads;
    options.fold = request.fold;
    options.memory_headroom = request.memory_headroom;
    options.stop = &interrupt.flag();
    if (request.progress && !request.quiet && rank == 0)
        options.progress = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
    SweepShare share;
    share.indices = rank_share(r.points.size(), rank, ranks);
    const bool inject = injected_failure_rank() == rank && ranks > 1;
    if (inject && share.indices.size() > 1) share.indices.erase(share.indices.begin() + 1, share.indices.end());
    options.only = share.indices;
    std::vector<PointOutcome> outcomes = run_points(base, r.axes, r.points, names, cache, options, &context.abandoned);
    for (const std::size_t i : share.indices) share.outcomes.push_back(std::move(outcomes[i]));
    share.signal = interrupt.flag().load();
    clusters = cache.size();
    if (inject) share.failure = "failure injected by CUBOID_SWEEP_FAIL_RANK (a test of the failure path)";
    return share;
}

// Rank 0's view of the shares: every outcome at its index, and why the sweep stopped early.
void merge_shares(std::vector<SweepShare> shares, SweepResult& r, std::ostream& err) {
    const int ranks = static_cast<int>(shares.size());
    int signal = 0;
    for (int k = 0; k < ranks; ++k) {
        SweepShare& share = shares[static_cast<std::size_t>(k)];
        if (!share.failure.empty()) {
            const std::string why = ranks > 1 ? fmt::format("rank {} of {} failed: {}", k, ranks, share.failure)
                                              : share.failure;
            fmt::print(err, "cuboid: {}; the results gathered so far are written, marked partial\n", why);
            r.stopped += (r.stopped.empty() ? "" : "; ") + why;
        }
        if (share.signal) signal = share.signal;
        merge_share(std::move(share), r.outcomes);
    }
    if (signal) {
        r.stopped += fmt::format("{}interrupted by {}", r.stopped.empty() ? "" : "; ", SweepInterrupt::name(signal));
        r.interrupted_by = signal;
    }
}

// The first reason of a status, for the message when no point ran.
std::string first_reason(const SweepResult& r, PointStatus s) {
    for (const auto& o : r.outcomes)
        if (o.status == s) return o.reason;
    return "";
}

int exit_code(const SweepResult& r, std::ostream& err) {
    const std::string& file = r.source_file;
    // A shell's convention for a process ended by a signal: 128 + its number.
    if (r.interrupted_by) {
        fmt::print(err, "cuboid: sweep {}: {} of {} points done, written marked partial\n", r.stopped, r.done(),
                   r.outcomes.size());
        return 128 + r.interrupted_by;
    }
    if (!r.stopped.empty()) return kExitFailure;
    if (const auto errors = r.count(PointStatus::Error)) {
        fmt::print(err, "cuboid: internal error (please report): {} of {} points failed; the first: {}\n", errors,
                   r.outcomes.size(), first_reason(r, PointStatus::Error));
        return kExitFailure;
    }
    if (r.count(PointStatus::Ok) > 0) return kExitOk;
    if (r.count(PointStatus::OutOfMemory) > 0) {
        fmt::print(err, "cuboid: {}: no point of the sweep fits in GPU memory ({})\n", file, sweep_summary(r));
        return kExitOutOfMemory;
    }
    fmt::print(err, "cuboid: error: {}: no point of the sweep is a valid plan ({}); the first: {}\n", file,
               sweep_summary(r), first_reason(r, PointStatus::Invalid));
    return kExitBadInput;
}

// The outputs rank 0 (or the single process) writes, opened once the input is known good.
struct Outputs {
    Outputs(const SweepRequest& request, std::ostream& out)
        : csv(request.csv, out), json(request.json, out), html(request.html, out) {}
    OutputTarget csv;
    OutputTarget json;
    OutputTarget html;
};

int write_outputs(const SweepRequest& request, Outputs& files, const SweepResult& r, std::ostream& out,
                  std::ostream& err) {
    if (files.csv.given()) {
        write_sweep_csv(files.csv.stream(), r);
        files.csv.commit();
    }
    if (files.json.given()) {
        files.json.stream() << sweep_json(r).dump(2) << "\n";
        files.json.commit();
    }
    if (files.html.given()) {
        files.html.stream() << sweep_html(r, {"sweep", sweep_summary(r), {}});
        files.html.commit();
    }
    if (!files.csv.to_standard_output() && !files.json.to_standard_output() && !request.quiet)
        write_sweep_table(out, r, request.top);
    return exit_code(r, err);
}

int single_process(const SweepRequest& request, std::ostream& out, std::ostream& err) {
    const auto catalog = parse_builtin_catalog();
    const Scenario base = base_scenario(request, builtin_name_resolvers(catalog));
    Outputs files(request, out);
    SweepResult r = prepared(base, request);
    const SweepInterrupt interrupt;
    ShareContext context(catalog);
    const auto start = std::chrono::steady_clock::now();
    std::vector<SweepShare> shares{run_share(base, r, request, err, interrupt, 0, 1, r.clusters, context)};
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    merge_shares(std::move(shares), r, err);
    return write_outputs(request, files, ranked(std::move(r)), out, err);
}

// Every rank reaches the gather, whatever happened to it before: a rank that fails (bad input
// on its node, an exception) sends its failure instead of leaving rank 0 waiting for it.
int across_ranks(const SweepRequest& request, std::ostream& out, std::ostream& err) {
    const MpiSession mpi;
    const SweepInterrupt interrupt;
    std::optional<SweepResult> r;
    std::optional<Outputs> files;
    std::optional<ShareContext> context;  // after the MPI session: its workers end before MPI does
    SweepShare mine;
    const auto start = std::chrono::steady_clock::now();
    const RankFailure failure = attempted([&] {
        const auto catalog = parse_builtin_catalog();
        const Scenario base = base_scenario(request, builtin_name_resolvers(catalog));
        if (mpi.rank() == 0) files.emplace(request, out);
        r = prepared(base, request);
        r->ranks = mpi.size();
        mine = run_share(base, *r, request, err, interrupt, mpi.rank(), mpi.size(), r->clusters,
                         context.emplace(catalog));
    });
    if (failure.failed()) mine = SweepShare{{}, {}, failure.what, 0};
    std::vector<SweepShare> shares = mpi.gather(mine);
    return concluded(mpi, failure, [&] {
        // Failing before the sweep was prepared ends it here; a failure after it is rank 0's share
        // (its failure carried in `mine`), merged with the others'.
        if (!r) throw std::runtime_error(mine.failure);
        r->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        merge_shares(std::move(shares), *r, err);
        return write_outputs(request, *files, ranked(std::move(*r)), out, err);
    });
}

}  // namespace

int sweep_command(const SweepRequest& request, std::ostream& out, std::ostream& err) {
    check_request(request);
    return run_in_processes(
        "sweep", err, [&] { return single_process(request, out, err); }, [&] { return across_ranks(request, out, err); });
}

}  // namespace cuboid::cli
