#include "strategies/cli/whatif_run.hpp"

#include <algorithm>
#include <chrono>

#include "hardware_models/catalog.hpp"
#include "hardware_models/economics.hpp"
#include "hardware_models/errors.hpp"
#include "strategies/cli/search_output.hpp"

#include <fmt/format.h>

namespace cuboid::cli {

void fill_training_figures(WhatifRow& row, const Study& study, const StudyCluster& cluster) {
    constexpr double kSecondsPerHour = 3600.0;
    if (!row.best) return;
    const RunResult& x = *row.search.plans.outcomes[*row.best].result;
    if (x.tokens_per_s <= 0.0 || !row.scenario.training.tokens) return;
    row.time_to_train_s = *row.scenario.training.tokens / x.tokens_per_s;
    const double hours = row.time_to_train_s / kSecondsPerHour;
    row.gpu_hours = x.gpus * hours;
    // Energy at the stated node power for the whole run (the nodes draw it while training),
    // times the facility's power usage effectiveness.
    row.energy_kwh = row.scenario.cluster.nodes * row.scenario.cost.node_power_kw.value_or(0.0) * hours * study.pue;
    CostInputs in = resolve_cost_inputs(row.scenario, hw::Economics::builtin());
    if (in.node_power_kw)
        in.node_power_kw->source =
            cluster.power_from_catalog ? cluster.power_source : cluster.power_source + " in " + study.source_file;
    in.pue = {study.pue, study.pue_source};
    row.training_cost = training_cost(in, x.gpus, row.scenario.cluster.nodes, row.time_to_train_s);
    row.cost_usd = row.training_cost->rented_usd.value_or(0.0);
    if (x.goodput && x.goodput->effective_time_to_train_s)
        row.training_cost_with_failures =
            training_cost(in, x.gpus, row.scenario.cluster.nodes, *x.goodput->effective_time_to_train_s);
}

std::size_t WhatifResult::pairs_done() const {
    return static_cast<std::size_t>(
        std::count_if(rows.begin(), rows.end(), [](const WhatifRow& row) { return row.search.plans.stopped.empty(); }));
}

WhatifResult run_whatif(const Study& study, const NameResolvers& names, const WhatifOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    WhatifResult r;
    r.name = study.name;
    r.source_file = study.source_file;
    r.pue = study.pue;
    r.threads = options.threads;
    r.pairs_total = study.clusters.size() * study.models.size();
    r.rank_by = options.rank_by;
    r.pue_source = study.pue_source;
    SearchOptions search;
    search.threads = options.threads;
    search.keep = 1;
    search.stop = options.stop;
    for (const StudyCluster& cluster : study.clusters) {
        // One cluster's model, shared by its models' searches and released with them: a study's
        // memory is that of its largest cluster, not of all of them.
        HardwareCache cache(catalog);
        for (const StudyModel& model : study.models) {
            if (options.stop_now ? options.stop_now() : (options.stop && options.stop->poll())) break;
            WhatifRow row{cluster.name, model.name, pair_scenario(study, cluster, model), {}, {}, 0, 0, 0, 0, {}, {}};
            if (options.progress) {
                const std::string pair = fmt::format("pair {}/{} {} {}", r.rows.size() + 1, r.pairs_total,
                                                     cluster.name, model.name);
                search.progress = [&, pair](const SearchProgress& p) {
                    options.progress(pair + ": " + search_progress_text(p));
                };
            }
            try {
                const SearchSpace space = pair_space(study, row.scenario);
                row.search = options.search ? options.search(row.scenario, space, names, cache, search)
                                            : run_search(row.scenario, space, names, cache, search);
            } catch (const std::exception& e) {
                // A bug in one pair: the rows so far are kept and written, marked partial.
                if (options.stop) options.stop->stop_for(fmt::format("internal error in {} {}: {}", cluster.name,
                                                                     model.name, e.what()));
                r.stopped = fmt::format("internal error in {} {}: {}", cluster.name, model.name, e.what());
                break;
            }
            row.best = best_plan(row.search);
            fill_training_figures(row, study, cluster);
            r.rows.push_back(std::move(row));
            r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (options.row_done) options.row_done(r);
        }
        if (!r.stopped.empty() || (options.stop && options.stop->stopped())) break;
    }
    if (options.stop && options.stop->stopped() && r.stopped.empty()) {
        r.stopped = options.stop->reason();
        r.interrupted_by = options.stop->signal();
    }
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

const char* criterion_name(Criterion c) {
    switch (c) {
        case Criterion::Time: return "time";
        case Criterion::Cost: return "rented-cost";
        case Criterion::OwnedCost: return "owned-cost";
        case Criterion::Energy: return "energy";
    }
    return "time";
}

Criterion parse_criterion(const std::string& text) {
    for (const Criterion c : {Criterion::Time, Criterion::Cost, Criterion::OwnedCost, Criterion::Energy})
        if (text == criterion_name(c)) return c;
    throw InputError({"", 0, "--rank-by"},
                     fmt::format("expected one of time, rented-cost, owned-cost, energy, got '{}'", text));
}

std::optional<double> criterion_value(const WhatifRow& row, Criterion c) {
    if (!row.best || row.time_to_train_s <= 0.0) return std::nullopt;
    const auto& cost = row.training_cost;
    switch (c) {
        case Criterion::Time: return row.time_to_train_s;
        case Criterion::Cost: return cost ? cost->rented_usd : std::nullopt;
        case Criterion::OwnedCost: return cost ? cost->owned_usd : std::nullopt;
        // Energy at the study's node power; 0 when no node power is known.
        case Criterion::Energy: return row.energy_kwh > 0.0 ? std::optional<double>(row.energy_kwh) : std::nullopt;
    }
    return std::nullopt;
}

std::vector<std::size_t> ranked_rows(const WhatifResult& r, const std::string& model, Criterion c) {
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < r.rows.size(); ++i)
        if (r.rows[i].model == model) rows.push_back(i);
    std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
        const auto va = criterion_value(r.rows[a], c), vb = criterion_value(r.rows[b], c);
        return va && (!vb || *va < *vb);
    });
    return rows;
}

std::optional<std::size_t> winner(const WhatifResult& r, const std::string& model, Criterion c) {
    const auto rows = ranked_rows(r, model, c);
    if (rows.empty() || !criterion_value(r.rows[rows.front()], c)) return std::nullopt;
    return rows.front();
}

}  // namespace cuboid::cli
