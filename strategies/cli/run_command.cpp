#include "strategies/cli/run_command.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/overrides.hpp"
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

// Opens an output file before the run, so that a bad path costs no simulation.
std::ofstream open_output(const std::string& path, const char* option) {
    std::ofstream f(path);
    if (!f) throw InputError({path, 0, option}, "cannot write this file");
    return f;
}


}  // namespace

Scenario prepare_scenario(const RunRequest& request, const NameResolvers& names,
                          std::vector<std::string>* overridden) {
    Scenario s = load_scenario_file(request.scenario_path, names);
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
    const bool json_to_stdout = request.json && *request.json == "-";
    std::ofstream json_file;
    if (request.json && !json_to_stdout) json_file = open_output(*request.json, "--json");

    std::ofstream trace_file;
    if (request.trace) trace_file = open_output(*request.trace, "--trace");

    RunResult r;
    try {
        if (request.print_schedule) {
            // With --json - standard output holds only the JSON document.
            std::ostream& to = json_to_stdout ? err : out;
            to << describe_schedule(s) << "\n";
        }
        RunOptions options;
        if (request.trace) options.trace = &trace_file;
        options.fold = request.fold;
        r = run_scenario(s, options);
    } catch (const InputError& e) {
        throw located(e, s, overridden);
    }

    if (json_to_stdout) out << result_json(s, r).dump(2) << "\n";
    if (json_file.is_open()) json_file << result_json(s, r).dump(2) << "\n";
    if (!json_to_stdout && !request.quiet) write_report(out, s, r);
    if (r.fits_in_memory) return kExitOk;
    fmt::print(err, "cuboid: {}: the plan does not fit in GPU memory: peak {:.1f} GB > {:.1f} GB per GPU\n",
               s.source_file, r.peak_memory_bytes / 1e9, r.memory_capacity_bytes / 1e9);
    return kExitOutOfMemory;
}

}  // namespace cuboid::cli
