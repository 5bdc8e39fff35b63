#include "strategies/cli/whatif_output.hpp"

#include "strategies/cli/cost_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "strategies/cli/search_output.hpp"

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

// "time cost" for the criteria this row wins among the rows of its model.
std::string wins_of(const WhatifResult& r, std::size_t i) {
    std::string wins;
    const std::pair<Criterion, const char*> criteria[] = {
        {Criterion::Time, "time"}, {Criterion::Cost, "cost"}, {Criterion::Energy, "energy"}};
    for (const auto& [c, word] : criteria)
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

// The price the row's cost used: the study's, else the catalog's (0: none).
double price_per_gpu_hour(const WhatifRow& row) {
    if (row.scenario.cost.gpu_hour_usd) return *row.scenario.cost.gpu_hour_usd;
    return row.training_cost && row.training_cost->inputs.gpu_hour_usd ? row.training_cost->inputs.gpu_hour_usd->value
                                                                       : 0.0;
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
    j["threads"] = r.threads;
    j["wall_s"] = r.wall_s;
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
        const std::pair<Criterion, const char*> criteria[] = {
            {Criterion::Time, "time"}, {Criterion::Cost, "cost"}, {Criterion::Energy, "energy"}};
        for (const auto& [c, word] : criteria) {
            const auto i = winner(r, model, c);
            w[word] = i ? nlohmann::ordered_json(r.rows[*i].cluster) : nlohmann::ordered_json();
        }
        j["winners"].push_back(w);
    }
    return j;
}

void write_whatif_csv(std::ostream& out, const WhatifResult& r) {
    std::vector<std::string> columns{
        "cluster", "model", "gpu", "gpus", "nodes", "gpu_hour_usd", "node_power_kw", "tokens", "status", "wins",
        "plan_text", "plan/tensor", "plan/pipeline", "plan/data", "plan/micro_batch", "plan/schedule",
        "plan/virtual_stages", "plan/recompute", "plan/tensor_mode", "plan/overlap_chunks",
        "plan/sequence_parallel", "plan/zero_stage", "iteration_time_s", "tokens_per_s", "mfu", "peak_memory_gb",
        "time_to_train_days", "gpu_hours", "cost_usd", "energy_kwh", "training_cost/rented_usd",
        "training_cost/owned_usd", "training_cost/owned_capex_usd", "training_cost/owned_energy_kwh",
        "training_cost/owned_energy_usd"};
    // Each input of the cost with its source, after the costs.
    for (const char* input : {"gpu_hour_usd", "gpu_purchase_usd", "node_power_kw", "power_usd_per_kwh", "pue",
                              "amortisation_years", "utilisation"})
        for (const char* part : {"value", "source"})
            columns.push_back(fmt::format("training_cost/inputs/{}/{}", input, part));
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
            fmt::print(out, "{}{}", k ? "," : "", row.contains(ptr) ? csv_text(row.at(ptr)) : "");
        }
        fmt::print(out, "\n");
    }
}

void write_whatif_table(std::ostream& out, const WhatifResult& r) {
    fmt::print(out, "what-if   {} ({}), PUE {:.2f}, {:.1f} s on {} threads\n", r.name, r.source_file, r.pue, r.wall_s,
               r.threads);
    if (r.partial())
        fmt::print(out, "partial   {} of {} pairs done ({})\n", r.pairs_done(), r.pairs_total, partial_reason(r));
    for (const auto& model : model_names(r)) {
        fmt::print(out, "\nmodel {}\n{:<16} {:>6} {:>8} {:>9} {:>11} {:>11} {:>10} {:>6}  {:<14} {}\n", model, "cluster",
                   "GPUs", "days", "GPU-hours", "cost USD", "energy MWh", "$/GPU-h", "MFU %", "wins", "best plan");
        // (cost USD: rented; the owned cost and every input's source follow the tables)
        for (std::size_t i = 0; i < r.rows.size(); ++i) {
            const WhatifRow& row = r.rows[i];
            if (row.model != model) continue;
            if (!row.best) {
                fmt::print(out, "{:<16} {:>6}  {}\n", row.cluster, row.scenario.cluster.gpus(), row_status(row));
                continue;
            }
            const RunResult& x = *row.search.plans.outcomes[*row.best].result;
            fmt::print(out, "{:<16} {:>6} {:>8.1f} {:>9.3g} {:>11.4g} {:>11.4g} {:>10.2f} {:>6.1f}  {:<14} {}\n",
                       row.cluster, x.gpus, row.time_to_train_s / kSecondsPerDay, row.gpu_hours, row.cost_usd,
                       row.energy_kwh / 1000.0, price_per_gpu_hour(row), 100.0 * x.mfu,
                       wins_of(r, i), plan_text(row.search.plans, *row.best));
        }
        for (const Criterion c : {Criterion::Time, Criterion::Cost, Criterion::Energy}) {
            const auto w = winner(r, model, c);
            const char* word = c == Criterion::Time ? "fastest" : c == Criterion::Cost ? "cheapest" : "least energy";
            fmt::print(out, "{:<13} {}\n", word, w ? r.rows[*w].cluster : std::string("none"));
        }
    }
    fmt::print(out, "\nenergy: nodes x node power x time x PUE; cost: GPU-hours x price per GPU-hour\n");
    for (const WhatifRow& row : r.rows) {
        if (!row.training_cost) continue;
        fmt::print(out, "\n{} / {}\n", row.cluster, row.model);
        for (const std::string& line : cost_lines(*row.training_cost, row.scenario.cluster.gpu)) fmt::print(out, "{}\n", line);
    }
}

}  // namespace cuboid::cli
