#include "strategies/cli/whatif_output.hpp"

#include "strategies/cli/cost_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "strategies/cli/json_result.hpp"
#include "strategies/cli/search_output.hpp"
#include "strategies/cli/text_report.hpp"

namespace cuboid::cli {
namespace {

constexpr double kSecondsPerDay = 86400.0;

std::string row_status(const WhatifRow& row) {
    if (row.best) return "ok";
    if (!row.search.plans.stopped.empty()) return "stopped";
    return row.search.counts.pruned_memory > 0 ? "no plan fits" : "no valid plan";
}

std::vector<std::string> model_names(const WhatifResult& r) {
    std::vector<std::string> names;
    for (const auto& row : r.rows)
        if (std::find(names.begin(), names.end(), row.model) == names.end()) names.push_back(row.model);
    return names;
}

// The criteria with their words in "wins" and in the JSON's winners (the rented cost is "cost").
constexpr std::pair<Criterion, const char*> kWinWords[] = {
    {Criterion::Time, "time"}, {Criterion::Cost, "cost"}, {Criterion::Energy, "energy"},
    {Criterion::OwnedCost, "owned-cost"}};

// "time cost" for the criteria this row wins among the rows of its model.
std::string wins_of(const WhatifResult& r, std::size_t i) {
    std::string wins;
    for (const auto& [c, word] : kWinWords)
        if (winner(r, r.rows[i].model, c) == i) {
            if (!wins.empty()) wins.push_back(' ');
            wins.append(word);
        }
    return wins;
}

std::string csv_text(const nlohmann::ordered_json& v) {
    if (v.is_null()) return "";
    if (!v.is_string()) return v.dump();
    const std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q(1, '"');
    for (const char ch : s) {
        q.push_back(ch);
        if (ch == '"') q.push_back('"');  // RFC 4180: a quote inside a quoted field is doubled
    }
    q.push_back('"');
    return q;
}

const RunResult& best_result(const WhatifRow& row) { return *row.search.plans.outcomes[*row.best].result; }

// The price the row's cost used: the study's, else the catalog's (0: none).
double price_per_gpu_hour(const WhatifRow& row) {
    if (row.scenario.cost.gpu_hour_usd) return *row.scenario.cost.gpu_hour_usd;
    return row.training_cost && row.training_cost->inputs.gpu_hour_usd ? row.training_cost->inputs.gpu_hour_usd->value
                                                                       : 0.0;
}

// The rows of `model` again, in the table's order, with failures: goodput, the time to train
// with checkpoints, restarts and lost work (strategies/goodput.hpp), and the costs over that time.
void write_failures_table(std::ostream& out, const WhatifResult& r, const std::string& model) {
    const auto order = ranked_rows(r, model, r.rank_by);
    const bool any = std::any_of(order.begin(), order.end(), [&](std::size_t i) {
        return r.rows[i].best && best_result(r.rows[i]).goodput;
    });
    if (!any) return;
    fmt::print(out, "\nwith failures (interruptions, checkpoints and restarts)\n{:<16} {:>9} {:>8} {:>11} {:>11} {:>16} {:>14}\n", "cluster", "goodput %", "days",
               "rented USD", "owned USD", "failures/GPU-day", "checkpoint");
    for (const std::size_t i : order) {
        const WhatifRow& row = r.rows[i];
        if (!row.best || !best_result(row).goodput) continue;
        const Goodput& g = *best_result(row).goodput;
        const TrainingCost* c = row.training_cost_with_failures ? &*row.training_cost_with_failures : nullptr;
        // A cost whose input nobody gives is said to be missing; a time that never ends has no cost.
        auto usd = [&](const std::optional<double>& v) {
            if (!g.effective_time_to_train_s) return std::string("never");
            return c && v ? fmt::format("{:.4g}", *v) : std::string("no price");
        };
        fmt::print(out, "{:<16} {:>9.1f} {:>8} {:>11} {:>11} {:>16.2g} {:>14}\n", row.cluster, 100.0 * g.goodput,
                   g.effective_time_to_train_s ? fmt::format("{:.1f}", *g.effective_time_to_train_s / kSecondsPerDay)
                                               : std::string("never"),
                   usd(c ? c->rented_usd : std::nullopt), usd(c ? c->owned_usd : std::nullopt),
                   g.failures_per_gpu_day,
                   std::isfinite(g.checkpoint_interval_s) ? "every " + human_duration(g.checkpoint_interval_s)
                                                          : std::string("never"));
    }
}

}  // namespace

std::string partial_reason(const WhatifResult& r) {
    if (!r.stopped.empty()) return r.stopped;
    return r.partial() ? "in progress" : "";
}

nlohmann::ordered_json whatif_row_json(const WhatifResult& r, std::size_t i) {
    const WhatifRow& row = r.rows[i];
    const Scenario& s = row.scenario;
    nlohmann::ordered_json j;
    j["cluster"] = row.cluster;
    j["model"] = row.model;
    j["gpu"] = s.cluster.gpu;
    j["gpus"] = s.cluster.gpus();
    j["nodes"] = s.cluster.nodes;
    j["gpu_hour_usd"] = price_per_gpu_hour(row);
    j["node_power_kw"] = s.cost.node_power_kw.value_or(0.0);
    j["tokens"] = s.training.tokens.value_or(0.0);
    j["global_batch"] = s.training.global_batch;
    j["status"] = row_status(row);
    j["wins"] = wins_of(r, i);
    // The row's place among its model's clusters by --rank-by (1: first); null without the figure.
    const auto order = ranked_rows(r, row.model, r.rank_by);
    const auto place = std::find(order.begin(), order.end(), i) - order.begin();
    j["rank"] = criterion_value(row, r.rank_by) ? nlohmann::ordered_json(place + 1) : nlohmann::ordered_json();
    if (row.best) {
        const SweepResult& p = row.search.plans;
        const RunResult& x = *p.outcomes[*row.best].result;
        nlohmann::ordered_json plan;
        for (std::size_t a = 0; a < p.axes.size(); ++a) {
            const std::string& key = p.axes[a].first;
            plan[key.substr(key.rfind('.') + 1)] = typed_value(key, p.points[*row.best][a]);
        }
        j["plan"] = plan;
        j["plan_text"] = plan_text(p, *row.best);
        j["iteration_time_s"] = x.iteration_time_s;
        j["tokens_per_s"] = x.tokens_per_s;
        j["mfu"] = x.mfu;
        j["peak_memory_gb"] = x.peak_memory_bytes / 1e9;
        j["time_to_train_s"] = row.time_to_train_s;
        j["time_to_train_days"] = row.time_to_train_s / kSecondsPerDay;
        j["gpu_hours"] = row.gpu_hours;
        j["cost_usd"] = row.cost_usd;
        j["energy_kwh"] = row.energy_kwh;
        if (row.training_cost) j["training_cost"] = cost_json(*row.training_cost);
        if (x.goodput) j["goodput"] = goodput_json(*x.goodput);
        if (row.training_cost_with_failures)
            j["training_cost_with_failures"] = cost_json(*row.training_cost_with_failures);
    }
    const SearchCounts& c = row.search.counts;
    j["search"] = {{"candidates", c.candidates}, {"invalid", c.invalid},         {"pruned_memory", c.pruned_memory},
                   {"pruned_bound", c.pruned_bound}, {"simulated", c.simulated}, {"wall_s", row.search.wall_s}};
    if (row.search.plans.partial()) {
        j["search"]["partial"] = true;
        j["search"]["reason"] = row.search.plans.partial_reason();
    }
    return j;
}

nlohmann::ordered_json whatif_json(const WhatifResult& r) {
    nlohmann::ordered_json j;
    j["study"] = r.name;
    j["source_file"] = r.source_file;
    j["pue"] = r.pue;
    j["pue_source"] = r.pue_source;
    j["threads"] = r.threads;
    j["wall_s"] = r.wall_s;
    j["rank_by"] = criterion_name(r.rank_by);
    if (r.partial()) {
        j["partial"] = true;
        j["pairs_done"] = r.pairs_done();
        j["pairs_total"] = r.pairs_total;
        j["reason"] = partial_reason(r);
    }
    j["rows"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.rows.size(); ++i) j["rows"].push_back(whatif_row_json(r, i));
    j["winners"] = nlohmann::ordered_json::array();
    for (const auto& model : model_names(r)) {
        nlohmann::ordered_json w{{"model", model}};
        for (const auto& [c, word] : kWinWords) {
            const auto i = winner(r, model, c);
            w[c == Criterion::OwnedCost ? "owned_cost" : word] = i ? nlohmann::ordered_json(r.rows[*i].cluster) : nlohmann::ordered_json();
        }
        j["winners"].push_back(w);
    }
    return j;
}

void write_whatif_csv(std::ostream& out, const WhatifResult& r) {
    std::vector<std::string> columns{
        "cluster", "model", "gpu", "gpus", "nodes", "gpu_hour_usd", "node_power_kw", "tokens", "status", "wins", "rank",
        "plan_text", "plan/tensor", "plan/pipeline", "plan/data", "plan/micro_batch", "plan/schedule",
        "plan/virtual_stages", "plan/recompute", "plan/tensor_mode", "plan/overlap_chunks",
        "plan/sequence_parallel", "plan/zero_stage", "iteration_time_s", "tokens_per_s", "mfu", "peak_memory_gb",
        "time_to_train_days", "gpu_hours", "cost_usd", "energy_kwh"};
    // The costs, each input with its source, then goodput and the costs over the time with failures.
    for (std::string column : cost_csv_columns("training_cost")) {
        std::replace(column.begin(), column.end(), '.', '/');
        columns.push_back(column);
    }
    columns.insert(columns.end(), {"goodput/goodput", "goodput/effective_time_to_train_s"});
    for (std::string column : cost_csv_columns("training_cost_with_failures")) {
        if (column.find(".inputs.") != std::string::npos) continue;
        std::replace(column.begin(), column.end(), '.', '/');
        columns.push_back(column);
    }
    if (r.partial())
        fmt::print(out, "# partial: {} of {} pairs done ({})\n", r.pairs_done(), r.pairs_total, partial_reason(r));
    for (std::size_t k = 0; k < columns.size(); ++k) {
        std::string title = columns[k];
        std::replace(title.begin(), title.end(), '/', '.');
        fmt::print(out, "{}{}", k ? "," : "", title);
    }
    fmt::print(out, "\n");
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        const auto row = whatif_row_json(r, i);
        for (std::size_t k = 0; k < columns.size(); ++k) {
            const nlohmann::ordered_json::json_pointer ptr("/" + columns[k]);
            std::string cell = row.contains(ptr) ? csv_text(row.at(ptr)) : "";
            if (cell.empty()) {
                std::string dotted = columns[k];
                std::replace(dotted.begin(), dotted.end(), '/', '.');
                cell = csv_text(missing_input_cell(row, dotted));
            }
            fmt::print(out, "{}{}", k ? "," : "", cell);
        }
        fmt::print(out, "\n");
    }
}

void write_whatif_table(std::ostream& out, const WhatifResult& r) {
    fmt::print(out, "what-if   {} ({}), {:.1f} s on {} threads\nPUE       {:.2f}: {}\n", r.name, r.source_file, r.wall_s,
               r.threads, r.pue, r.pue_source);
    if (r.partial())
        fmt::print(out, "partial   {} of {} pairs done ({})\n", r.pairs_done(), r.pairs_total, partial_reason(r));
    for (const auto& model : model_names(r)) {
        fmt::print(out, "\nmodel {} (ranked by {})\n{:<16} {:>6} {:>8} {:>9} {:>11} {:>11} {:>11} {:>10} {:>6}  {:<14} {}\n",
                   model, criterion_name(r.rank_by), "cluster", "GPUs", "days", "GPU-hours", "rented USD", "owned USD",
                   "energy MWh", "$/GPU-h", "MFU %", "wins", "best plan");
        // (every cost input's source follows the tables)
        for (const std::size_t i : ranked_rows(r, model, r.rank_by)) {
            const WhatifRow& row = r.rows[i];
            if (!row.best) {
                fmt::print(out, "{:<16} {:>6}  {}\n", row.cluster, row.scenario.cluster.gpus(), row_status(row));
                continue;
            }
            const RunResult& x = *row.search.plans.outcomes[*row.best].result;
            // A cost or price whose input nobody gives is said to be missing, never shown as 0.
            auto figure = [](const std::optional<double>& v, const char* format) {
                return v ? fmt::format(fmt::runtime(format), *v) : std::string("no price");
            };
            const auto price = row.training_cost && row.training_cost->inputs.gpu_hour_usd
                                   ? std::optional<double>(price_per_gpu_hour(row))
                                   : std::nullopt;
            fmt::print(out, "{:<16} {:>6} {:>8.1f} {:>9.3g} {:>11} {:>11} {:>11.4g} {:>10} {:>6.1f}  {:<14} {}\n",
                       row.cluster, x.gpus, row.time_to_train_s / kSecondsPerDay, row.gpu_hours,
                       figure(criterion_value(row, Criterion::Cost), "{:.4g}"),
                       figure(criterion_value(row, Criterion::OwnedCost), "{:.4g}"), row.energy_kwh / 1000.0,
                       figure(price, "{:.2f}"), 100.0 * x.mfu, wins_of(r, i), plan_text(row.search.plans, *row.best));
        }
        write_failures_table(out, r, model);
        for (const auto& [c, word] : {std::pair{Criterion::Time, "fastest"}, std::pair{Criterion::Cost, "cheapest"},
                                      std::pair{Criterion::OwnedCost, "cheapest owned"},
                                      std::pair{Criterion::Energy, "least energy"}}) {
            const auto w = winner(r, model, c);
            fmt::print(out, "{:<14} {}\n", word, w ? r.rows[*w].cluster : std::string("none"));
        }
    }
    fmt::print(out, "\nenergy: nodes x node power x time x PUE; rented: GPU-hours x price per GPU-hour; owned: "
                    "purchase share + energy x power price; no price: an input the catalog lacks (set it in the study); "
                    "with failures: the time and costs with interruptions, checkpoints and restarts (goodput; "
                    "reliability.*, docs/scenario.md)\n");
    for (const WhatifRow& row : r.rows) {
        if (!row.training_cost) continue;
        fmt::print(out, "\n{} / {}\n", row.cluster, row.model);
        for (const std::string& line : cost_lines(*row.training_cost, row.scenario.cluster.gpu)) fmt::print(out, "{}\n", line);
    }
}

}  // namespace cuboid::cli
