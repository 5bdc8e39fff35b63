#include "strategies/cli/sweep_output.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "strategies/cli/cost_report.hpp"
#include "strategies/cli/scenario_keys.hpp"
#include "strategies/cli/sweep_ranking.hpp"
#include "strategies/cli/value_parse.hpp"

namespace cuboid::cli {
namespace {

// Columns read from the row JSON by JSON pointer; "status" and "pareto" come first, and every
// part of the breakdown (breakdown_parts) between the first list and the second.
const char* const kRunColumns[] = {
    "scenario", "gpus", "iteration_time_s", "tokens_per_s", "model_flops_per_iteration",
    "hardware_flops_per_iteration", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu",
    "peak_memory_bytes", "memory_capacity_bytes", "fits_in_memory"};
const char* const kRunColumnsAfterBreakdown[] = {
    "sim.events", "sim.wall_s", "sim.fold_factor", "critical_rank", "fingerprint", "plan.tensor", "plan.pipeline",
    "plan.data", "plan.virtual_stages", "plan.schedule", "plan.micro_batch", "time_to_train_s", "cost_usd", "energy_kwh", "mfu_bf16"};

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (const char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

std::string csv_value(const nlohmann::ordered_json& v) {
    if (v.is_null()) return "";
    if (v.is_string()) return csv_field(v.get<std::string>());
    return v.dump();  // numbers round-trip exactly; booleans as true/false
}

nlohmann::ordered_json at_path(const nlohmann::ordered_json& row, const std::string& dotted) {
    std::string pointer = "/" + dotted;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::ordered_json::json_pointer p(pointer);
    return row.contains(p) ? row.at(p) : nlohmann::ordered_json();
}

}  // namespace

std::size_t SweepResult::count(PointStatus s) const {
    return static_cast<std::size_t>(
        std::count_if(outcomes.begin(), outcomes.end(), [&](const PointOutcome& o) { return o.status == s; }));
}

bool SweepResult::partial() const {
    return !stopped.empty() || count(PointStatus::Error) > 0 || count(PointStatus::NotRun) > 0;
}

std::string SweepResult::partial_reason() const {
    std::string why = stopped;
    if (const auto errors = count(PointStatus::Error))
        why += fmt::format("{}{} point{} failed with an internal error", why.empty() ? "" : "; ", errors,
                           errors == 1 ? "" : "s");
    if (why.empty() && partial()) why = "some points were not run";
    return why;
}

SweepResult ranked(SweepResult r) {
    r.order = sweep_order(r.outcomes);
    r.pareto = sweep_pareto(r.outcomes);
    return r;
}

nlohmann::ordered_json typed_value(const std::string& key, const std::string& text) {
    const KeyDef* def = find_key(key);
    const InputLocation nowhere{};
    try {
        if (def && def->type == "integer") return parse_int(text, nowhere);
        if (def && def->type == "number") return parse_number(text, nowhere);
        if (def && def->type == "boolean") return parse_bool(text, nowhere);
    } catch (const InputError&) {
        // Checked when the file was read; keep the text if the types ever disagree.
    }
    return text;
}

nlohmann::ordered_json sweep_row_json(const SweepResult& r, std::size_t point) {
    nlohmann::ordered_json row;
    for (std::size_t a = 0; a < r.axes.size(); ++a)
        row[r.axes[a].first] = typed_value(r.axes[a].first, r.points[point][a]);
    const PointOutcome& o = r.outcomes[point];
    row["status"] = status_text(o);
    row["pareto"] = static_cast<bool>(r.pareto[point]);
    if (o.run_json.is_object())
        for (const auto& [field, value] : o.run_json.items()) row[field] = value;
    else
        row["scenario"] = r.name;
    return row;
}

nlohmann::ordered_json sweep_json(const SweepResult& r) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const std::size_t i : r.order)
        if (r.outcomes[i].status != PointStatus::NotRun) rows.push_back(sweep_row_json(r, i));
    if (!r.partial()) return rows;
    return {{"partial", true},
            {"points_done", r.done()},
            {"points_total", r.outcomes.size()},
            {"reason", r.partial_reason()},
            {"rows", std::move(rows)}};
}

std::vector<std::string> sweep_csv_columns() {
    std::vector<std::string> columns{"status", "pareto"};
    columns.insert(columns.end(), std::begin(kRunColumns), std::end(kRunColumns));
    for (const BreakdownPart& part : breakdown_parts()) columns.push_back(std::string("breakdown_s.") + part.key);
    columns.insert(columns.end(), std::begin(kRunColumnsAfterBreakdown), std::end(kRunColumnsAfterBreakdown));
    // The cost rented and owned with each input and its source, then goodput and the same costs
    // over the time to train with failures (their inputs are the same): present with training.tokens.
    const auto costs = cost_csv_columns("training_cost");
    columns.insert(columns.end(), costs.begin(), costs.end());
    columns.insert(columns.end(), {"goodput.goodput", "goodput.effective_time_to_train_s"});
    const auto with_failures = cost_csv_columns("training_cost_with_failures");
    for (const std::string& column : with_failures)
        if (column.find(".inputs.") == std::string::npos) columns.push_back(column);
    return columns;
}

void write_sweep_csv(std::ostream& out, const SweepResult& r) {
    std::vector<std::string> header;
    for (const auto& axis : r.axes) header.push_back(axis.first);
    const auto rest = sweep_csv_columns();
    header.insert(header.end(), rest.begin(), rest.end());
    if (r.partial())
        out << fmt::format("# partial: {} of {} points done ({})\n", r.done(), r.outcomes.size(), r.partial_reason());
    for (std::size_t c = 0; c < header.size(); ++c) out << (c ? "," : "") << csv_field(header[c]);
    out << "\n";
    for (const std::size_t i : r.order) {
        if (r.outcomes[i].status == PointStatus::NotRun) continue;
        const nlohmann::ordered_json row = sweep_row_json(r, i);
        std::size_t c = 0;
        for (std::size_t a = 0; a < r.axes.size(); ++a) out << (c++ ? "," : "") << csv_field(r.points[i][a]);
        for (const auto& column : rest) {
            std::string cell = csv_value(at_path(row, column));
            if (cell.empty()) cell = csv_field(missing_input_cell(row, column));
            out << (c++ ? "," : "") << cell;
        }
        out << "\n";
    }
}

}  // namespace cuboid::cli
