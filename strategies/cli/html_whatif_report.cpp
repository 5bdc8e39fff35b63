// The what-if page (html_report.hpp): the figures of whatif_row_json, laid out for people.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/cost_report.hpp"
#include "strategies/cli/html_page.hpp"
#include "strategies/cli/html_report.hpp"
#include "strategies/cli/whatif_output.hpp"

namespace cuboid::cli {
namespace {

constexpr double kSecondsPerDay = 86400.0;

using Json = nlohmann::ordered_json;

const RunResult& best_result(const WhatifRow& row) { return *row.search.plans.outcomes[*row.best].result; }

std::string network_text(const hw::ClusterSpec& c) {
    return fmt::format("{} in a node; {} x {} Gbit/s {} per node, {}", hw::to_string(c.intra_node), c.nics_per_node,
                       c.nic_gbps, hw::to_string(c.inter_node), hw::to_string(c.topology));
}

void write_inputs(HtmlPage& page, const WhatifResult& r, const Study& study) {
    page.heading(2, "Inputs");
    page.definitions({{"study file", r.source_file},
                      {"pairs", fmt::format("{} clusters x {} models = {} pairs, {} done", study.clusters.size(),
                                            study.models.size(), r.pairs_total, r.pairs_done())},
                      {"PUE", fmt::format("{:.2f}: {}", r.pue, study.pue_source)},
                      {"search", fmt::format("{:.1f} s on {} threads", r.wall_s, r.threads)}});
    page.heading(3, "Clusters");
    std::vector<std::vector<std::string>> rows;
    for (const StudyCluster& c : study.clusters) {
        const hw::ClusterSpec& s = c.settings.cluster;
        rows.push_back({c.name, s.gpu, fmt::format("{} x {}", s.nodes, s.gpus_per_node), std::to_string(s.gpus()),
                        network_text(s), c.gpu_hour_usd > 0.0 ? fmt::format("{:.2f}", c.gpu_hour_usd) : "-",
                        fmt::format("{:.2f}", c.node_power_kw), c.power_source});
    }
    page.table({"cluster", "GPU", "nodes x GPUs", "GPUs", "network", "USD per GPU-hour", "node kW", "node power from"},
               rows, "clusters");
    page.heading(3, "Models");
    rows.clear();
    for (const StudyModel& m : study.models) {
        const ModelSpec& s = m.settings.model;
        const TrainingSpec& t = m.settings.training;
        rows.push_back({m.name, s.preset.empty() ? "-" : s.preset, std::to_string(s.layers), std::to_string(s.hidden),
                        std::to_string(s.seq_len), t.tokens ? fmt::format("{:.3g}", *t.tokens) : "-",
                        std::to_string(t.global_batch)});
    }
    page.table({"model", "preset", "layers", "hidden", "sequence", "tokens", "global batch"}, rows, "models");
    page.heading(3, "Search space of every pair");
    if (study.search.IsDefined() && !study.search.IsNull()) {
        YAML::Emitter yaml;
        yaml << study.search;
        page.preformatted(yaml.c_str());
    } else {
        page.paragraph("the default search space (docs/search.md)");
    }
}

// The rows of `model`, fastest first; those without a plan last, in file order.
std::vector<std::size_t> ranked_rows(const WhatifResult& r, const std::string& model) {
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < r.rows.size(); ++i)
        if (r.rows[i].model == model) rows.push_back(i);
    std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
        const WhatifRow &x = r.rows[a], &y = r.rows[b];
        if (x.best.has_value() != y.best.has_value()) return x.best.has_value();
        return x.best && x.time_to_train_s < y.time_to_train_s;
    });
    return rows;
}

void write_ranking(HtmlPage& page, const WhatifResult& r, const std::vector<std::size_t>& order) {
    std::vector<std::vector<std::string>> rows;
    int rank = 0;
    for (const std::size_t i : order) {
        const Json j = whatif_row_json(r, i);
        const WhatifRow& row = r.rows[i];
        const bool planned = row.best.has_value();
        rows.push_back({planned ? std::to_string(++rank) : "-", row.cluster, std::to_string(j.at("gpus").get<long>()),
                        j.at("status").get<std::string>(), number_or_dash(j, "/time_to_train_days", "{:.3g}"),
                        whole_or_dash(j, "/gpu_hours"), whole_or_dash(j, "/training_cost/rented_usd"),
                        whole_or_dash(j, "/training_cost/owned_usd"),
                        planned ? fmt::format("{:.4g}", row.energy_kwh / 1000.0) : "-",
                        number_or_dash(j, "/gpu_hour_usd", "{:.2f}"),
                        planned ? fmt::format("{:.1f}", 100.0 * best_result(row).mfu) : "-",
                        number_or_dash(j, "/peak_memory_gb", "{:.1f}"), j.at("wins").get<std::string>(),
                        planned ? j.at("plan_text").get<std::string>() : "-"});
    }
    page.table({"rank", "cluster", "GPUs", "status", "days", "GPU-hours", "rented USD", "owned USD", "energy MWh",
                "USD per GPU-hour", "MFU %", "peak GB", "wins", "best plan"},
               rows, "ranking");
}

// The ranked rows again with failures: goodput and the time and costs with interruptions,
// checkpoints and restarts (strategies/goodput.hpp), from the same row JSON as the CSV.
void write_failures(HtmlPage& page, const WhatifResult& r, const std::vector<std::size_t>& order) {
    std::vector<std::vector<std::string>> rows;
    for (const std::size_t i : order) {
        const Json j = whatif_row_json(r, i);
        if (!j.contains("goodput")) continue;
        const Json& g = j.at("goodput");
        const bool ends = g.contains("effective_time_to_train_s");
        const auto usd = [&](const char* pointer) { return ends ? whole_or_dash(j, pointer) : std::string("never"); };
        rows.push_back({r.rows[i].cluster, fmt::format("{:.1f}", 100.0 * g.at("goodput").get<double>()),
                        ends ? fmt::format("{:.3g}", g.at("effective_time_to_train_s").get<double>() / kSecondsPerDay)
                             : "never",
                        usd("/training_cost_with_failures/rented_usd"), usd("/training_cost_with_failures/owned_usd"),
                        fmt::format("{:.2g}", g.at("failures_per_gpu_day").get<double>()),
                        fmt::format("{:.3g}", g.at("checkpoint_bytes").get<double>() / 1e9),
                        number_or_dash(j, "/goodput/checkpoint_interval_s", "{:.0f}"),
                        number_or_dash(j, "/goodput/restart_s", "{:.3g}")});
    }
    if (rows.empty()) return;
    page.heading(3, "With failures");
    page.table({"cluster", "goodput %", "days", "rented USD", "owned USD", "failures per GPU-day", "checkpoint GB",
                "checkpoint every s", "restart s"},
               rows, "with-failures");
    page.paragraph("the best plan of each cluster with interruptions at the failure rate shown, a checkpoint of the "
                   "model state every interval (Daly's optimum unless reliability.checkpoint_interval_s is given) "
                   "and a restart from the last one; the costs are those of the table above over this longer time",
                   "note");
}

// One bar per cluster with a plan, the winner of the criterion highlighted.
void write_bars(HtmlPage& page, const WhatifResult& r, const std::vector<std::size_t>& order,
                std::optional<std::size_t> win, const std::string& caption,
                const std::function<std::optional<double>(const WhatifRow&)>& value, const char* unit) {
    std::vector<svg::Bar> bars;
    for (const std::size_t i : order) {
        const WhatifRow& row = r.rows[i];
        if (!row.best) continue;
        const auto v = value(row);
        if (!v) continue;
        const std::string shown = std::string(unit) == "USD" ? whole_text(*v) : fmt::format("{:.4g}", *v);
        bars.push_back({row.cluster, *v, shown + " " + unit, win == i});
    }
    if (!bars.empty()) page.figure(svg::bar_chart(bars), caption);
}

std::optional<double> rented(const WhatifRow& row) {
    return row.training_cost ? row.training_cost->rented_usd : std::nullopt;
}
std::optional<double> owned(const WhatifRow& row) {
    return row.training_cost ? row.training_cost->owned_usd : std::nullopt;
}

void write_model(HtmlPage& page, const WhatifResult& r, const std::string& model) {
    page.heading(2, "Model " + model);
    const auto order = ranked_rows(r, model);
    page.heading(3, "Clusters ranked by time to train");
    write_ranking(page, r, order);
    write_failures(page, r, order);

    const auto fastest = winner(r, model, Criterion::Time);
    const auto cheapest = winner(r, model, Criterion::Cost);
    const auto least_energy = winner(r, model, Criterion::Energy);
    page.heading(3, "Time, cost and energy per cluster");
    write_bars(page, r, order, fastest, "time to train, days (the fastest highlighted)",
               [](const WhatifRow& w) { return std::optional(w.time_to_train_s / kSecondsPerDay); }, "days");
    write_bars(page, r, order, cheapest, "cost rented, USD: GPU-hours x price per GPU-hour (the cheapest highlighted)",
               rented, "USD");
    write_bars(page, r, order, std::nullopt, "cost owned, USD: purchase price amortised + facility energy", owned,
               "USD");
    write_bars(page, r, order, least_energy,
               "energy, MWh: nodes x node power x time x PUE (the least highlighted)",
               [](const WhatifRow& w) { return std::optional(w.energy_kwh / 1000.0); }, "MWh");

    std::vector<svg::ScatterPoint> points;
    for (const std::size_t i : order)
        if (const WhatifRow& row = r.rows[i]; row.best && rented(row))
            points.push_back({row.cluster, row.time_to_train_s / kSecondsPerDay, *rented(row), false});
    if (!points.empty()) {
        mark_pareto_front(points);
        page.heading(3, "Time against cost: the Pareto front");
        page.figure(svg::scatter_chart(points, "time to train, days", "cost rented, USD"),
                    "each cluster's best plan; in red the clusters no other beats on both time and cost");
    }

    std::vector<std::pair<std::string, const RunResult*>> winners;
    const std::pair<std::optional<std::size_t>, const char*> criteria[] = {
        {fastest, "fastest"}, {cheapest, "cheapest"}, {least_energy, "least energy"}};
    for (const auto& [w, word] : criteria) {
        if (!w) continue;
        // A plain pointer for the lambda: a structured binding cannot be captured before C++20
        // compilers that implement P1091 (clang 16), and Debian 12's clang is 14.
        const RunResult* const result = &best_result(r.rows[*w]);
        const auto same =
            std::find_if(winners.begin(), winners.end(), [result](const auto& p) { return p.second == result; });
        if (same != winners.end())
            same->first += fmt::format(", {}", word);
        else
            winners.push_back({fmt::format("{} ({}", r.rows[*w].cluster, word), &best_result(r.rows[*w])});
    }
    if (winners.empty()) return;
    for (auto& w : winners) w.first += ")";
    page.heading(3, "Where the winners' iteration time goes");
    page.figure(breakdown_chart(winners),
                "seconds per iteration on the GPU of the critical path: compute, recomputation, communication not "
                "hidden behind compute, and the pipeline bubble (fill and drain, and waiting for a busier stage)");
}

}  // namespace

std::string whatif_html(const WhatifResult& r, const Study& study) {
    HtmlPage page("cuboid what-if: " + r.name);
    if (r.partial())
        page.partial_banner(fmt::format("{} of {} pairs done ({}); the rankings cover those only", r.pairs_done(),
                                        r.pairs_total, partial_reason(r)));
    write_inputs(page, r, study);
    std::vector<std::string> models;
    for (const WhatifRow& row : r.rows)
        if (std::find(models.begin(), models.end(), row.model) == models.end()) models.push_back(row.model);
    for (const std::string& model : models) write_model(page, r, model);
    page.heading(2, "Cost inputs and their sources");
    page.paragraph("energy: nodes x node power x time x PUE; rented cost: GPU-hours x price per GPU-hour; owned cost: "
                   "the purchase price's share of the amortisation period plus the energy at the power price",
                   "note");
    for (const WhatifRow& row : r.rows) {
        if (!row.training_cost) continue;
        page.heading(4, row.cluster + " / " + row.model);
        std::string lines;
        for (const std::string& line : cost_lines(*row.training_cost, row.scenario.cluster.gpu)) lines += line + "\n";
        page.preformatted(lines);
    }
    return page.finish();
}

}  // namespace cuboid::cli
