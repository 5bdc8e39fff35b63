// `cuboid search`: the best plans for the scenario's model on its cluster, over the space of its
// `search:` section (or the default space), pruned by memory and by a lower bound on time.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "strategies/work_limits.hpp"

namespace cuboid::cli {

struct SearchRequest {
    std::string scenario_path;
    std::vector<std::string> sets;     // KEY=VALUE applied to the scenario first
    std::optional<int> threads;        // default: the hardware threads of the machine
    WorkLimits limits;                 // --max-events, --max-memory, per candidate
    std::optional<int> top;            // plans reported (and kept exact by the bound), default 5
    std::optional<int> max_gpus;       // overrides search.max_gpus
    std::optional<std::string> csv;    // the simulated plans (sweep CSV), file or "-"
    std::optional<std::string> json;   // file or "-"
    std::optional<std::string> html;   // the shareable page (html_report.hpp): a file
    bool quiet = false;
    bool fold = true;                  // false (--no-fold): simulate every rank of every plan
    double memory_headroom = 0.0;      // --memory-headroom: the fraction of GPU memory left free
    std::optional<double> time_limit_s;  // --time-limit: stop and write what was found after this long
    bool progress = false;             // a progress line on standard error (a terminal)
};

// 0 with a plan that fits; 3 when valid plans exist but none fits; 2 when no plan is valid (or
// bad input, thrown as InputError before the search); 1 after an internal error; 128 + the signal
// when SIGINT, SIGTERM or SIGHUP stopped it. A search stopped by --time-limit or --max-memory
// (the process's resident memory) writes the plans found so far, marked partial, and exits as a
// complete one would with those plans.
int search_command(const SearchRequest& request, std::ostream& out, std::ostream& err);

}  // namespace cuboid::cli
