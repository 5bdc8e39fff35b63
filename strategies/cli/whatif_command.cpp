#include "strategies/cli/whatif_command.hpp"

#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/whatif_output.hpp"

namespace cuboid::cli {
namespace {

int whatif_exit_code(const WhatifResult& r, std::ostream& err) {
    int code = kExitOk;
    for (const WhatifRow& row : r.rows) {
        if (!row.search.first_error.empty()) {
            fmt::print(err, "cuboid: internal error (please report): {}: {}\n", row.scenario.name, row.search.first_error);
            return kExitFailure;
        }
        if (!row.best) {
            fmt::print(err, "cuboid: {}: {}: no plan of the search space is valid and fits ({})\n", r.source_file,
                       row.scenario.name, search_summary(row.search));
            code = kExitOutOfMemory;
        }
    }
    return code;
}

}  // namespace

int whatif_command(const WhatifRequest& request, std::ostream& out, std::ostream& err) {
    if (request.threads && *request.threads < 1)
        throw InputError({"", 0, "--threads"}, fmt::format("expected an integer >= 1, got {}", *request.threads));
    if (request.csv && request.json && *request.csv == "-" && *request.json == "-")
        throw InputError({"", 0, "--csv"}, "--csv - and --json - both want standard output; send one to a file");
    const auto names = builtin_name_resolvers();
    const Study study = load_study_file(request.study_path, names);
    OutputTarget csv(request.csv, out);
    OutputTarget json(request.json, out);
    const int threads =
        request.threads.value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    const WhatifResult r = run_whatif(study, names, threads);

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
