#include "strategies/cli/search_command.hpp"

#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/sweep_interrupt.hpp"
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
    if (r.counts.pruned_memory > 0) {
        fmt::print(err, "cuboid: {}: no plan of the search space fits in GPU memory ({})\n", r.plans.source_file,
                   search_summary(r));
        return kExitOutOfMemory;
    }
    fmt::print(err, "cuboid: error: {}: no plan of the search space is valid ({}); the first: {}\n",
               r.plans.source_file, search_summary(r), r.first_invalid);
    return kExitBadInput;
}

}  // namespace

int search_command(const SearchRequest& request, std::ostream& out, std::ostream& err) {
    check_search_request(request);
    // The built-in catalog, parsed once: the name lookups and the hardware cache share it.
    const auto catalog = parse_builtin_catalog();
    const auto names = builtin_name_resolvers(catalog);
    SearchScenario loaded = load_search_scenario(request.scenario_path, names);
    if (!loaded.scenario.sweep.empty())
        throw InputError(locate(loaded.scenario, "sweep"),
                         "a search scenario has no sweep: section; restrict the plan space with search: "
                         "(docs/search.md), or use cuboid sweep");
    apply_overrides(loaded.scenario, request.sets, names);
    loaded.scenario.limits = request.limits;
    check_complete(loaded.scenario);
    SearchSpace space = search_space_of(loaded);
    if (request.max_gpus) space.max_gpus = request.max_gpus;
    const Scenario base = limited_to_max_gpus(loaded.scenario, space);
    OutputTarget csv(request.csv, out);
    OutputTarget json(request.json, out);

    HardwareCache cache(*catalog);
    SearchOptions options;
    options.threads = request.threads.value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    options.keep = request.top.value_or(kDefaultTop);
    options.fold = request.fold;
    options.memory_headroom = request.memory_headroom;
    const SweepInterrupt interrupt;
    LongWorkLimits limits;
    limits.time_limit_s = request.time_limit_s;
    if (request.limits.max_memory_bytes > 0.0) limits.max_memory_bytes = request.limits.max_memory_bytes;
    LongWorkStop stop(&interrupt.flag(), limits);
    options.stop = &stop;
    AbandonedWorkers abandoned;  // after what its workers read: joined first, once the outputs are written
    options.abandoned = &abandoned;
    SweepProgress line(err);
    if (request.progress && !request.quiet)
        options.progress = [&](const SearchProgress& p) { line.show(search_progress_text(p)); };
    const SearchResult r = run_search(base, space, names, cache, options);
    line.end();

    const int top = options.keep;
    if (csv.given()) {
        write_sweep_csv(csv.stream(), r.plans);
        csv.commit();
    }
    if (json.given()) {
        json.stream() << search_json(r, top).dump(2) << "\n";
        json.commit();
    }
    if (!csv.to_standard_output() && !json.to_standard_output() && !request.quiet) write_search_table(out, r, top);
    return search_exit_code(r, err);
}

}  // namespace cuboid::cli
