#include "strategies/cli/search_command.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/html_report.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/rank_outcome.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/search_share.hpp"
#include "strategies/cli/sweep_interrupt.hpp"
#include "strategies/cli/sweep_mpi.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "strategies/cli/sweep_progress.hpp"

namespace cuboid::cli {
namespace {

constexpr int kDefaultTop = 5;

void check_search_request(const SearchRequest& r) {
    const std::pair<const char*, std::optional<int>> positive[] = {
        {"--threads", r.threads}, {"--top", r.top}, {"--max-gpus", r.max_gpus}};
    for (const auto& [option, v] : positive)
        if (v && *v < 1) throw InputError({"", 0, option}, fmt::format("expected an integer >= 1, got {}", *v));
    check_memory_headroom(r.memory_headroom);
    check_time_limit(r.time_limit_s);
    if (r.csv && r.json && *r.csv == "-" && *r.json == "-")
        throw InputError({"", 0, "--csv"}, "--csv - and --json - both want standard output; send one to a file");
    check_html_path(r.html);
}

int search_exit_code(const SearchResult& r, std::ostream& err) {
    if (r.plans.interrupted_by) {
        fmt::print(err, "cuboid: search {}: {} plans simulated, written marked partial\n", r.plans.stopped,
                   r.counts.simulated);
        return 128 + r.plans.interrupted_by;
    }
    if (!r.plans.stopped.empty())
        fmt::print(err, "cuboid: search stopped: {}; the plans found so far are written, marked partial\n",
                   r.plans.stopped);
    if (!r.first_error.empty() || r.plans.count(PointStatus::Error) > 0) {
        fmt::print(err, "cuboid: internal error (please report): {}\n",
                   r.first_error.empty() ? "a simulated plan failed" : r.first_error);
        return kExitFailure;
    }
    if (best_plan(r)) return kExitOk;
    if (!r.plans.stopped.empty() && r.counts.not_reached > 0) {
        // Neither "none is valid" nor "none fits" is known: most of the space was not reached.
        fmt::print(err,
                   "cuboid: {}: the search stopped before any plan fit ({}): allow more time or memory, or "
                   "narrow the space (search:)\n",
                   r.plans.source_file, search_summary(r));
        return kExitStoppedWithoutResult;
    }
    if (r.counts.pruned_memory > 0) {
        fmt::print(err, "cuboid: {}: no plan of the search space fits in GPU memory ({})\n", r.plans.source_file,
                   search_summary(r));
        return kExitOutOfMemory;
    }
    fmt::print(err, "cuboid: error: {}: no plan of the search space is valid ({}); the first: {}\n",
               r.plans.source_file, search_summary(r), r.first_invalid);
    return kExitBadInput;
}

// The scenario and space a search request names, with the catalog they were read with.
struct SearchSetup {
    std::shared_ptr<const hw::Catalog> catalog;
    NameResolvers names;
    Scenario base;
    SearchSpace space;
};

SearchSetup setup_of(const SearchRequest& request) {
    SearchSetup s;
    // The built-in catalog, parsed once: the name lookups and the hardware cache share it.
    s.catalog = parse_builtin_catalog();
    s.names = builtin_name_resolvers(s.catalog);
    SearchScenario loaded = load_search_scenario(request.scenario_path, s.names);
    if (!loaded.scenario.sweep.empty())
        throw InputError(locate(loaded.scenario, "sweep"),
                         "a search scenario has no sweep: section; restrict the plan space with search: "
                         "(docs/search.md), or use cuboid sweep");
    apply_overrides(loaded.scenario, request.sets, s.names);
    loaded.scenario.limits = request.limits;
    check_complete(loaded.scenario);
    s.space = search_space_of(loaded);
    if (request.max_gpus) s.space.max_gpus = request.max_gpus;
    s.base = limited_to_max_gpus(loaded.scenario, s.space);
    return s;
}

// The outputs of a search, opened before it runs (an output that cannot be written costs no
// simulation).
struct SearchOutputs {
    OutputTarget csv, json, html;
    SearchOutputs(const SearchRequest& request, std::ostream& out)
        : csv(request.csv, out), json(request.json, out), html(request.html, out) {}
};

int write_search(const SearchRequest& request, SearchOutputs& o, const SearchResult& r, int top, std::ostream& out,
                 std::ostream& err) {
    if (o.csv.given()) {
        write_sweep_csv(o.csv.stream(), r.plans);
        o.csv.commit();
    }
    if (o.json.given()) {
        o.json.stream() << search_json(r, top).dump(2) << "\n";
        o.json.commit();
    }
    if (o.html.given()) {
        o.html.stream() << sweep_html(r.plans, {"search", search_summary(r), plan_text});
        o.html.commit();
    }
    if (!o.csv.to_standard_output() && !o.json.to_standard_output() && !request.quiet) write_search_table(out, r, top);
    return search_exit_code(r, err);
}

LongWorkLimits limits_of(const SearchRequest& request) {
    LongWorkLimits limits;
    limits.time_limit_s = request.time_limit_s;
    if (request.limits.max_memory_bytes > 0.0) limits.max_memory_bytes = request.limits.max_memory_bytes;
    return limits;
}

// What a search's workers touch besides its setup, kept until its outputs are written: a stop
// leaves workers still in a long simulation to finish on their own (AbandonedWorkers), and the
// outputs are written at once; they are joined when this ends.
struct SearchWorkers {
    HardwareCache cache;
    SweepInterrupt interrupt;
    LongWorkStop stop;
    AbandonedWorkers abandoned;  // last: destroyed, so joined, before what its workers read
    SearchWorkers(const hw::Catalog& catalog, const SearchRequest& request)
        : cache(catalog), stop(&interrupt.flag(), limits_of(request)) {}
};

// The search of `setup` on this process's threads; `share_rank` of `share_size`: an MPI rank's
// share of the candidates (search_share.hpp). `progress`: show the progress line.
SearchResult searched(const SearchRequest& request, const SearchSetup& setup, SearchWorkers& w, int share_rank,
                      int share_size, bool progress, std::ostream& err) {
    SearchOptions options;
    options.threads = request.threads.value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    options.keep = request.top.value_or(kDefaultTop);
    options.fold = request.fold;
    options.memory_headroom = request.memory_headroom;
    options.share_rank = share_rank;
    options.share_size = share_size;
    options.stop = &w.stop;
    options.abandoned = &w.abandoned;
    SweepProgress line(err);
    if (progress && request.progress && !request.quiet)
        options.progress = [&](const SearchProgress& p) { line.show(search_progress_text(p)); };
    SearchResult r = run_search(setup.base, setup.space, setup.names, w.cache, options);
    line.end();
    return r;
}

int single_process(const SearchRequest& request, std::ostream& out, std::ostream& err) {
    const SearchSetup setup = setup_of(request);
    SearchOutputs outputs(request, out);
    SearchWorkers workers(*setup.catalog, request);
    const SearchResult r = searched(request, setup, workers, 0, 1, true, err);
    return write_search(request, outputs, r, request.top.value_or(kDefaultTop), out, err);
}

// Every rank reaches the gather whatever happened to it before: a rank that fails sends its
// failure instead of leaving rank 0 waiting (as `cuboid sweep` across ranks does).
int across_ranks(const SearchRequest& request, std::ostream& out, std::ostream& err) {
    const MpiSession mpi;
    const auto start = std::chrono::steady_clock::now();
    std::optional<SearchSetup> setup;
    std::optional<SearchOutputs> outputs;
    std::optional<SearchWorkers> workers;
    SearchResult mine;
    const RankFailure failure = attempted([&] {
        setup.emplace(setup_of(request));
        if (mpi.rank() == 0) outputs.emplace(request, out);
        workers.emplace(*setup->catalog, request);
        mine = searched(request, *setup, *workers, mpi.rank(), mpi.size(), mpi.rank() == 0, err);
    });
    const auto shares = mpi.gather_bytes(encode_search_share(mine, failure.what));
    return concluded(mpi, failure, [&] {
        if (failure.failed()) throw std::runtime_error(failure.what);
        std::vector<SearchShare> decoded;
        for (const auto& bytes : shares) decoded.push_back(decode_search_share(bytes));
        SearchResult r = merge_search_shares(std::move(decoded), search_candidates(setup->space, setup->base), mine);
        r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        r.plans.wall_s = r.wall_s;
        r.plans = ranked(std::move(r.plans));
        return write_search(request, *outputs, r, request.top.value_or(kDefaultTop), out, err);
    });
}

}  // namespace

int search_command(const SearchRequest& request, std::ostream& out, std::ostream& err) {
    check_search_request(request);
    return run_in_processes(
        "search", err, [&] { return single_process(request, out, err); }, [&] { return across_ranks(request, out, err); });
}

}  // namespace cuboid::cli
