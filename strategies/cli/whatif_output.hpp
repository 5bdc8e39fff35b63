// The outputs of `cuboid whatif` (field names in docs/search.md): a table per model with the
// winner per criterion, and JSON / CSV rows with one (cluster, model) pair each.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "strategies/cli/whatif_run.hpp"

namespace cuboid::cli {

// Why the study is partial: the stop's reason, or "in progress" for the rows written while it
// runs; empty when complete.
std::string partial_reason(const WhatifResult& r);

// One pair: cluster and price figures, status, the best plan and its training figures.
nlohmann::ordered_json whatif_row_json(const WhatifResult& r, std::size_t row);

// {"study", "source_file", "pue", "threads", "wall_s", "rows": [...], "winners": [...]}, with
// "partial": true, "pairs_done", "pairs_total" and "reason" after wall_s when partial.
nlohmann::ordered_json whatif_json(const WhatifResult& r);

// The scalar fields of the rows, with the plan flattened as "plan.tensor", one row per pair.
void write_whatif_csv(std::ostream& out, const WhatifResult& r);

void write_whatif_table(std::ostream& out, const WhatifResult& r);

}  // namespace cuboid::cli
