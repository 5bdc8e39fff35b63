// `cuboid whatif STUDY.yaml`: the study's pairs searched, reported as a table, CSV or JSON.
#pragma once

#include <optional>
#include <ostream>
#include <string>

namespace cuboid::cli {

struct WhatifRequest {
    std::string study_path;
    std::optional<int> threads;
    std::optional<std::string> csv;    // file or "-"
    std::optional<std::string> json;   // file or "-"
    std::optional<std::string> html;   // the shareable page (html_report.hpp): a file
    bool quiet = false;
    std::optional<double> time_limit_s;      // --time-limit
    std::optional<double> max_memory_bytes;  // --max-memory: the process's resident memory
    bool progress = false;                   // a progress line on standard error (a terminal)
    std::optional<std::string> rank_by;      // --rank-by: time, rented-cost, owned-cost, energy
};

// Throws InputError for a bad study (file:line:key). 0 when every pair has a plan that fits;
// 3 when some pair has none (its row says why; the others are still reported); 1 after an
// internal error; 128 + the signal after SIGINT, SIGTERM or SIGHUP. Each pair's row is written to
// the --csv / --json files as soon as its search ends; a study stopped early (a signal,
// --time-limit, --max-memory, an internal error) writes the rows done, marked partial.
int whatif_command(const WhatifRequest& request, std::ostream& out, std::ostream& err);

}  // namespace cuboid::cli
