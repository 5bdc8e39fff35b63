#include "strategies/cli/run_command.hpp"

#include <cmath>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/cli/fitting_changes.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/run_progress.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/text_report.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "strategies/schedule_print.hpp"

namespace cuboid::cli {
namespace {

// An error found while running (plan validation, catalog) points at where the user wrote the
// key: the --set that overrode it, else its line in the file (or its section's).
InputError located(const InputError& e, const Scenario& s, const std::vector<std::string>& overridden) {
    const std::string& key = e.where().key;
    if (key.empty()) return e.where().file.empty() ? relocated(e, {s.source_file, 0, ""}) : e;
    if (std::find(overridden.begin(), overridden.end(), key) != overridden.end())
        return relocated(e, {std::string(kOverrideFile), 0, key});
    if (e.where().file.empty() || (e.where().file == s.source_file && e.where().line == 0))
        return relocated(e, locate(s, key));
    return e;
}

std::vector<FittingChange> changes_that_fit(const Scenario& s) {
    const auto catalog = parse_builtin_catalog();
    const NameResolvers names = builtin_name_resolvers(catalog);
    FitContext context;
    context.names = &names;
    context.builtin = catalog.get();
    context.hardware = hw::Hardware::build(s.cluster, *catalog);
    return fitting_changes(s, context);
}

}  // namespace

void check_memory_headroom(double fraction) {
    if (!(fraction >= 0.0 && fraction < 1.0))
        throw InputError({"", 0, "--memory-headroom"},
                         fmt::format("expected a fraction of GPU memory in [0, 1), e.g. 0.1, got {}", fraction));
}

void check_time_limit(const std::optional<double>& seconds) {
    if (seconds && !(*seconds > 0.0 && std::isfinite(*seconds)))
        throw InputError({"", 0, "--time-limit"}, fmt::format("expected a positive number of seconds, got {}", *seconds));
}

Scenario prepare_scenario(const RunRequest& request, const NameResolvers& names,
                          std::vector<std::string>* overridden) {
    Scenario s = load_scenario_file(request.scenario_path, names);
    s.limits = request.limits;
    const auto keys = apply_overrides(s, request.sets, names);
    if (overridden) *overridden = keys;
    check_complete(s);
    try {
        check_no_ignored_keys(s);
    } catch (const InputError& e) {
        throw located(e, s, keys);
    }
    return s;
}

int run_command(const RunRequest& request, std::ostream& out, std::ostream& err) {
    std::vector<std::string> overridden;
    const Scenario s = prepare_scenario(request, builtin_name_resolvers(), &overridden);
    // Opened only now that the input is known good, and replaced only once the result exists.
    OutputTarget json(request.json, out);
    const bool json_to_stdout = json.to_standard_output();
    std::optional<sim::OutputFile> trace_file;
    if (request.trace) trace_file.emplace(*request.trace);

    RunResult r;
    // Ended (RunProgress::finish) before the report is written, or by its destructor when an
    // error leaves: the error's message then starts a line of its own.
    RunProgress progress(err, request.progress && !request.quiet);
    try {
        if (request.print_schedule) {
            // With --json - standard output holds only the JSON document.
            std::ostream& to = json_to_stdout ? err : out;
            to << describe_schedule(s) << "\n";
        }
        RunOptions options;
        if (request.trace) options.trace = &trace_file->stream();
        options.fold = request.fold;
        if (progress.drawing()) options.progress = [&progress](const sim::SimProgress& p) { progress.simulated(p); };
        r = run_scenario(s, options);
    } catch (const InputError& e) {
        throw located(e, s, overridden);
    }

    // An out-of-memory plan names the single changes that would fit, each checked by a run.
    std::vector<FittingChange> changes;
    if (!r.fits_in_memory) {
        progress.stage("the plan does not fit: simulating the single changes that would make it fit");
        changes = changes_that_fit(s);
    }
    progress.finish();

    if (json.given()) {
        nlohmann::ordered_json j = result_json(s, r);
        if (!r.fits_in_memory) j["memory"]["fitting_changes"] = fitting_changes_json(changes);
        json.stream() << j.dump(2) << "\n";
        json.commit();
    }
    if (trace_file) trace_file->commit();
    if (!json_to_stdout && !request.quiet) {
        write_report(out, s, r);
        if (!r.fits_in_memory) write_fitting_changes(out, changes);
    }
    if (r.fits_in_memory) return kExitOk;
    fmt::print(err, "cuboid: {}: the plan does not fit in GPU memory: peak {:.1f} GB > {:.1f} GB per GPU{}\n",
               s.source_file, r.peak_memory_bytes / 1e9, r.memory_capacity_bytes / 1e9, fitting_changes_summary(changes));
    return kExitOutOfMemory;
}

}  // namespace cuboid::cli
