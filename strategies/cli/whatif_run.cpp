#include "strategies/cli/whatif_run.hpp"

#include <chrono>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/search_output.hpp"

namespace cuboid::cli {

void fill_training_figures(WhatifRow& row, double pue) {
    constexpr double kSecondsPerHour = 3600.0;
    if (!row.best) return;
    const RunResult& x = *row.search.plans.outcomes[*row.best].result;
    if (x.tokens_per_s <= 0.0 || !row.scenario.training.tokens) return;
    row.time_to_train_s = *row.scenario.training.tokens / x.tokens_per_s;
    const double hours = row.time_to_train_s / kSecondsPerHour;
    row.gpu_hours = x.gpus * hours;
    row.cost_usd = row.gpu_hours * row.scenario.cost.gpu_hour_usd.value_or(0.0);
    // Energy at the stated node power for the whole run (the nodes draw it while training),
    // times the facility's power usage effectiveness.
    row.energy_kwh = row.scenario.cluster.nodes * row.scenario.cost.node_power_kw.value_or(0.0) * hours * pue;
}

WhatifResult run_whatif(const Study& study, const NameResolvers& names, int threads) {
    const auto start = std::chrono::steady_clock::now();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    WhatifResult r{study.name, study.source_file, study.pue, {}, threads, 0.0};
    SearchOptions options;
    options.threads = threads;
    options.keep = 1;
    for (const StudyCluster& cluster : study.clusters) {
        HardwareCache cache(catalog);  // one cluster's model, shared by its models' searches
        for (const StudyModel& model : study.models) {
            WhatifRow row{cluster.name, model.name, pair_scenario(study, cluster, model), {}, {}, 0, 0, 0, 0};
            row.search = run_search(row.scenario, pair_space(study, row.scenario), names, cache, options);
            row.best = best_plan(row.search);
            fill_training_figures(row, study.pue);
            r.rows.push_back(std::move(row));
        }
    }
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

std::optional<std::size_t> winner(const WhatifResult& r, const std::string& model, Criterion c) {
    std::optional<std::size_t> best;
    auto value = [&](const WhatifRow& row) {
        switch (c) {
            case Criterion::Time: return row.time_to_train_s;
            case Criterion::Cost: return row.cost_usd;
            case Criterion::Energy: return row.energy_kwh;
        }
        return row.time_to_train_s;
    };
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        const WhatifRow& row = r.rows[i];
        if (row.model != model || !row.best || row.time_to_train_s <= 0.0) continue;
        if (!best || value(row) < value(r.rows[*best])) best = i;
    }
    return best;
}

}  // namespace cuboid::cli
