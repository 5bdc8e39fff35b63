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
    bool quiet = false;
};

// Throws InputError for a bad study (file:line:key). 0 when every pair has a plan that fits;
// 3 when some pair has none (its row says why; the others are still reported); 1 after an
// internal error.
int whatif_command(const WhatifRequest& request, std::ostream& out, std::ostream& err);

}  // namespace cuboid::cli
