#include "strategies/cli/whatif_command.hpp"

#include <filesystem>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "sim/output_file.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/sweep_interrupt.hpp"
#include "strategies/cli/sweep_progress.hpp"
#include "strategies/cli/whatif_output.hpp"

namespace cuboid::cli {
namespace {

int whatif_exit_code(const WhatifResult& r, std::ostream& err) {
    if (r.interrupted_by) {
        fmt::print(err, "cuboid: whatif {}: {} of {} pairs done, written marked partial\n", r.stopped, r.pairs_done(),
                   r.pairs_total);
        return 128 + r.interrupted_by;
    }
    if (!r.stopped.empty()) {
        fmt::print(err, "cuboid: whatif stopped: {}; {} of {} pairs done, written marked partial\n", r.stopped,
                   r.pairs_done(), r.pairs_total);
        if (r.stopped.starts_with("internal error")) return kExitFailure;
    }
    int code = kExitOk;
    for (const WhatifRow& row : r.rows) {
        if (!row.search.first_error.empty()) {
            fmt::print(err, "cuboid: internal error (please report): {}: {}\n", row.scenario.name, row.search.first_error);
            return kExitFailure;
        }
        if (!row.best && row.search.plans.stopped.empty()) {
            fmt::print(err, "cuboid: {}: {}: no plan of the search space is valid and fits ({})\n", r.source_file,
                       row.scenario.name, search_summary(row.search));
            code = kExitOutOfMemory;
        }
    }
    return code;
}

// A file output that can be replaced while the study runs: a regular file, or none yet (a device
// or a FIFO is written once, at the end).
bool replaceable(const std::optional<std::string>& path) {
    if (!path || *path == "-") return false;
    std::error_code ec;
    const auto status = std::filesystem::status(*path, ec);
    return status.type() == std::filesystem::file_type::not_found || status.type() == std::filesystem::file_type::regular;
}

std::string csv_text(const WhatifResult& r) {
    std::ostringstream s;
    write_whatif_csv(s, r);
    return s.str();
}

}  // namespace

int whatif_command(const WhatifRequest& request, std::ostream& out, std::ostream& err) {
    if (request.threads && *request.threads < 1)
        throw InputError({"", 0, "--threads"}, fmt::format("expected an integer >= 1, got {}", *request.threads));
    check_time_limit(request.time_limit_s);
    if (request.csv && request.json && *request.csv == "-" && *request.json == "-")
        throw InputError({"", 0, "--csv"}, "--csv - and --json - both want standard output; send one to a file");
    const auto names = builtin_name_resolvers();
    const Study study = load_study_file(request.study_path, names);
    OutputTarget csv(request.csv, out);
    OutputTarget json(request.json, out);

    const SweepInterrupt interrupt;
    LongWorkStop stop(&interrupt.flag(), {request.time_limit_s, request.max_memory_bytes});
    WhatifOptions options;
    options.threads = request.threads.value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    options.stop = &stop;
    // Each pair's row is in the files as soon as its search ends (the files marked partial until
    // the last one): a study stopped by a second Ctrl-C or killed keeps the rows done.
    const bool csv_now = replaceable(request.csv), json_now = replaceable(request.json);
    options.row_done = [&](const WhatifResult& so_far) {
        if (csv_now) sim::write_output_file(*request.csv, csv_text(so_far));
        if (json_now) sim::write_output_file(*request.json, whatif_json(so_far).dump(2) + "\n");
    };
    SweepProgress line(err);
    if (request.progress && !request.quiet) options.progress = [&](const std::string& text) { line.show(text); };
    const WhatifResult r = run_whatif(study, names, options);
    line.end();

    if (csv.given()) {
        write_whatif_csv(csv.stream(), r);
        csv.commit();
    }
    if (json.given()) {
        json.stream() << whatif_json(r).dump(2) << "\n";
        json.commit();
    }
    if (!csv.to_standard_output() && !json.to_standard_output() && !request.quiet) write_whatif_table(out, r);
    return whatif_exit_code(r, err);
}

}  // namespace cuboid::cli
