#include "strategies/cli/sweep_command.hpp"

#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "strategies/cli/sweep_progress.hpp"
#include "strategies/cli/sweep_table.hpp"

namespace cuboid::cli {
namespace {

Scenario base_scenario(const SweepRequest& request, const NameResolvers& names) {
    Scenario s = load_scenario_file(request.scenario_path, names);
    if (s.sweep.empty())
        throw InputError({request.scenario_path, 0, "sweep"},
                         "the scenario has no sweep: section; use cuboid run for a single plan, or add a "
                         "sweep: map of dotted keys to lists (docs/scenario.md)");
    reject_swept_overrides(s.sweep, apply_overrides(s, request.sets, names));
    return s;
}

void check_request(const SweepRequest& r) {
    if (r.threads && *r.threads < 1)
        throw InputError({"", 0, "--threads"}, fmt::format("expected an integer >= 1, got {}", *r.threads));
    if (r.top && *r.top < 1) throw InputError({"", 0, "--top"}, fmt::format("expected an integer >= 1, got {}", *r.top));
    if (r.csv && r.json && *r.csv == "-" && *r.json == "-")
        throw InputError({"", 0, "--csv"}, "--csv - and --json - both want standard output; send one to a file");
}

std::ofstream open_output(const std::optional<std::string>& path, const char* option) {
    std::ofstream f;
    if (!path || *path == "-") return f;
    f.open(*path);
    if (!f) throw InputError({*path, 0, option}, "cannot write this file");
    return f;
}

int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

SweepResult run_sweep(const Scenario& base, const SweepRequest& request, std::ostream& err) {
    const auto names = builtin_name_resolvers();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    SweepResult r;
    r.name = base.name;
    r.source_file = base.source_file;
    r.axes = base.sweep;
    r.points = sweep_points(r.axes);
    r.threads = request.threads.value_or(default_threads());

    SweepProgress progress(err);
    SweepRunOptions options;
    options.threads = r.threads;
    if (request.progress && !request.quiet)
        options.progress = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
    const auto start = std::chrono::steady_clock::now();
    r.outcomes = run_points(base, r.axes, r.points, names, cache, options);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.clusters = cache.size();
    return ranked(std::move(r));
}

// The first reason of a status, for the message when no point ran.
std::string first_reason(const SweepResult& r, PointStatus s) {
    for (const auto& o : r.outcomes)
        if (o.status == s) return o.reason;
    return "";
}

int exit_code(const SweepResult& r, std::ostream& err) {
    const std::string& file = r.source_file;
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

}  // namespace

int sweep_command(const SweepRequest& request, std::ostream& out, std::ostream& err) {
    check_request(request);
    const Scenario base = base_scenario(request, builtin_name_resolvers());
    std::ofstream csv_file = open_output(request.csv, "--csv");
    std::ofstream json_file = open_output(request.json, "--json");

    const SweepResult r = run_sweep(base, request, err);

    const bool csv_stdout = request.csv && *request.csv == "-";
    const bool json_stdout = request.json && *request.json == "-";
    if (csv_file.is_open()) write_sweep_csv(csv_file, r);
    if (json_file.is_open()) json_file << sweep_json(r).dump(2) << "\n";
    if (csv_stdout) write_sweep_csv(out, r);
    if (json_stdout) out << sweep_json(r).dump(2) << "\n";
    if (!csv_stdout && !json_stdout && !request.quiet) write_sweep_table(out, r, request.top);
    return exit_code(r, err);
}

}  // namespace cuboid::cli
