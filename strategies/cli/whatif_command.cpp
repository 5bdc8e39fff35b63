#include "strategies/cli/whatif_command.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "sim/output_file.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/html_report.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/search_share.hpp"
#include "strategies/cli/sweep_interrupt.hpp"
#include "strategies/cli/sweep_progress.hpp"
#include "strategies/cli/sweep_mpi.hpp"
#include "strategies/cli/sweep_output.hpp"
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

// A study's outputs and their writers: `row_done` replaces the files after each pair when they
// are regular files, `finish` writes them (and the table) once the study ends.
struct WhatifOutputs {
    const WhatifRequest& request;
    const Study& study;
    OutputTarget csv, json, html;
    WhatifOutputs(const WhatifRequest& r, const Study& s, std::ostream& out)
        : request(r), study(s), csv(r.csv, out), json(r.json, out), html(r.html, out) {}

    // Each pair's row is in the files as soon as its search ends (the files marked partial until
    // the last one): a study stopped by a second Ctrl-C or killed keeps the rows done.
    std::function<void(const WhatifResult&)> row_writer() const {
        const bool csv_now = replaceable(request.csv), json_now = replaceable(request.json),
                   html_now = replaceable(request.html);
        return [this, csv_now, json_now, html_now](const WhatifResult& so_far) {
            if (csv_now) sim::write_output_file(*request.csv, csv_text(so_far));
            if (json_now) sim::write_output_file(*request.json, whatif_json(so_far).dump(2) + "\n");
            if (html_now) sim::write_output_file(*request.html, whatif_html(so_far, study));
        };
    }

    int finish(const WhatifResult& r, std::ostream& out, std::ostream& err) {
        if (csv.given()) {
            write_whatif_csv(csv.stream(), r);
            csv.commit();
        }
        if (json.given()) {
            json.stream() << whatif_json(r).dump(2) << "\n";
            json.commit();
        }
        if (html.given()) {
            html.stream() << whatif_html(r, study);
            html.commit();
        }
        if (!csv.to_standard_output() && !json.to_standard_output() && !request.quiet) write_whatif_table(out, r);
        return whatif_exit_code(r, err);
    }
};

WhatifOptions options_of(const WhatifRequest& request, LongWorkStop& stop) {
    WhatifOptions options;
    options.threads = request.threads.value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    options.stop = &stop;
    options.rank_by = request.rank_by ? parse_criterion(*request.rank_by) : Criterion::Time;
    return options;
}

int single_process(const WhatifRequest& request, std::ostream& out, std::ostream& err) {
    const auto names = builtin_name_resolvers();
    const Study study = load_study_file(request.study_path, names);
    WhatifOutputs outputs(request, study, out);
    const SweepInterrupt interrupt;
    LongWorkStop stop(&interrupt.flag(), {request.time_limit_s, request.max_memory_bytes});
    WhatifOptions options = options_of(request, stop);
    options.row_done = outputs.row_writer();
    SweepProgress line(err);
    if (request.progress && !request.quiet) options.progress = [&](const std::string& text) { line.show(text); };
    const WhatifResult r = run_whatif(study, names, options);
    line.end();
    return outputs.finish(r, out, err);
}

// Each pair searched across the ranks (search_share.hpp): every rank searches its share of the
// pair's candidates, rank 0 merges them and writes the row. The ranks go through the pairs
// together: a rank that cannot search a pair sends its failure (the pair's row records it), and
// the decision to stop before a pair is every rank's (MpiSession::any).
int across_ranks(const WhatifRequest& request, std::ostream& out, std::ostream& err) {
    const MpiSession mpi;
    const bool leader = mpi.rank() == 0;
    const auto names = builtin_name_resolvers();
    std::optional<Study> study;
    std::optional<WhatifOutputs> outputs;
    std::exception_ptr failure;
    int failure_code = kExitFailure;
    try {
        study.emplace(load_study_file(request.study_path, names));
        if (leader) outputs.emplace(request, *study, out);
    } catch (const InputError&) {
        failure = std::current_exception();
        failure_code = kExitBadInput;
    } catch (const sim::OutputError&) {
        failure = std::current_exception();  // rank 0's alone: it opens the outputs
        failure_code = kExitOutputFailed;
    }
    // Every rank learns whether any rank cannot start; rank 0 says why, as one process would (the
    // same input on every rank, so its reason is theirs).
    if (mpi.any(failure != nullptr)) {
        if (leader && failure) std::rethrow_exception(failure);
        if (leader) throw std::runtime_error("another rank could not read the study " + request.study_path);
        return failure ? failure_code : kExitFailure;
    }
    const SweepInterrupt interrupt;
    LongWorkStop stop(&interrupt.flag(), {request.time_limit_s, request.max_memory_bytes});
    WhatifOptions options = options_of(request, stop);
    options.search = [&](const Scenario& base, const SearchSpace& space, const NameResolvers& n, HardwareCache& cache,
                         const SearchOptions& o) {
        SearchOptions share = o;
        share.share_rank = mpi.rank();
        share.share_size = mpi.size();
        SearchResult mine;
        std::string why;
        try {
            mine = run_search(base, space, n, cache, share);
        } catch (const std::exception& e) {
            why = e.what();
        }
        const auto shares = mpi.gather_bytes(encode_search_share(mine, why));
        if (!leader) return mine;
        try {
            std::vector<SearchShare> decoded;
            for (const auto& bytes : shares) decoded.push_back(decode_search_share(bytes));
            SearchResult merged = merge_search_shares(std::move(decoded), search_candidates(space, base), mine);
            merged.wall_s = mine.wall_s;
            merged.plans.wall_s = mine.wall_s;
            merged.plans = ranked(std::move(merged.plans));
            return merged;
        } catch (const std::exception& e) {
            mine.first_error = e.what();  // the row says so; every rank goes on to the next pair
            return mine;
        }
    };
    options.stop_now = [&] {
        const bool here = stop.poll();
        const bool anywhere = mpi.any(here);
        if (anywhere && !here) stop.stop_for("another rank stopped");
        return anywhere;
    };
    SweepProgress line(err);
    if (leader) {
        options.row_done = outputs->row_writer();
        if (request.progress && !request.quiet) options.progress = [&](const std::string& text) { line.show(text); };
    }
    const WhatifResult r = run_whatif(*study, names, options);
    line.end();
    int code = kExitOk;
    if (leader) {
        try {
            code = outputs->finish(r, out, err);
        } catch (...) {
            mpi.barrier();
            throw;
        }
    }
    mpi.barrier();  // the others wait for rank 0's outputs: mpirun ends the job when one rank fails
    return code;
}

}  // namespace

int whatif_command(const WhatifRequest& request, std::ostream& out, std::ostream& err) {
    if (request.threads && *request.threads < 1)
        throw InputError({"", 0, "--threads"}, fmt::format("expected an integer >= 1, got {}", *request.threads));
    check_time_limit(request.time_limit_s);
    if (request.rank_by) parse_criterion(*request.rank_by);  // a bad value stops before any work
    if (request.csv && request.json && *request.csv == "-" && *request.json == "-")
        throw InputError({"", 0, "--csv"}, "--csv - and --json - both want standard output; send one to a file");
    check_html_path(request.html);
    return run_in_processes(
        "whatif", err, [&] { return single_process(request, out, err); }, [&] { return across_ranks(request, out, err); });
}

}  // namespace cuboid::cli
