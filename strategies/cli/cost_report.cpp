#include "strategies/cli/cost_report.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace cuboid::cli {
namespace {

struct InputRow {
    const char* json_name;
    const char* label;
    const char* unit;
    const char* key;  // the scenario key that supplies it
    const std::optional<hw::SourcedFigure>* figure;
};

std::vector<InputRow> input_rows(const TrainingCost& c, std::vector<std::optional<hw::SourcedFigure>>& always) {
    const CostInputs& in = c.inputs;
    always = {in.power_usd_per_kwh, in.pue, in.amortisation_years, in.utilisation};
    return {{"gpu_hour_usd", "price per GPU-hour", "USD", "cost.gpu_hour_usd", &in.gpu_hour_usd},
            {"gpu_purchase_usd", "purchase per GPU", "USD", "cost.gpu_purchase_usd", &in.purchase_usd_per_gpu},
            {"node_power_kw", "node power", "kW", "cost.node_power_kw", &in.node_power_kw},
            {"power_usd_per_kwh", "power price", "USD/kWh", "cost.power_usd_per_kwh", &always[0]},
            {"pue", "PUE", "", "cost.pue", &always[1]},
            {"amortisation_years", "amortisation", "years", "cost.amortisation_years", &always[2]},
            {"utilisation", "utilisation", "", "cost.utilisation", &always[3]}};
}

nlohmann::ordered_json optional_number(const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::vector<std::string> cost_lines(const TrainingCost& c, const std::string& gpu) {
    std::vector<std::string> lines;
    lines.push_back(c.rented_usd ? fmt::format("cost      rented {:.3g} USD = {:.4g} GPU-hours x {:.4g} USD/GPU-h",
                                               *c.rented_usd, *c.rented_usd / c.inputs.gpu_hour_usd->value,
                                               c.inputs.gpu_hour_usd->value)
                                 : "cost      rented not known: no price per GPU-hour (cost.gpu_hour_usd)");
    if (c.owned_usd)
        lines.push_back(fmt::format("          owned  {:.3g} USD = purchase share {:.3g} USD + energy {:.3g} MWh x "
                                    "{:.4g} USD/kWh = {:.3g} USD",
                                    *c.owned_usd, *c.owned_capex_usd, *c.owned_energy_kwh / 1000.0,
                                    c.inputs.power_usd_per_kwh.value, *c.owned_energy_usd));
    else
        lines.push_back(fmt::format("          owned  not known: no {} (cost.{})",
                                    c.owned_capex_usd ? "node power" : "purchase price",
                                    c.owned_capex_usd ? "node_power_kw" : "gpu_purchase_usd"));
    std::vector<std::optional<hw::SourcedFigure>> always;
    for (const InputRow& row : input_rows(c, always)) {
        const auto& f = *row.figure;
        if (f)
            lines.push_back(fmt::format("          {:<18} {:>9.6g} {:<8} {}", row.label, f->value, row.unit, f->source));
        else
            lines.push_back(fmt::format("          {:<18} {:>9} {:<8} no published figure for {} in the catalog; "
                                        "set {}",
                                        row.label, "-", row.unit, gpu.empty() ? "the GPU" : gpu, row.key));
    }
    return lines;
}

nlohmann::ordered_json cost_json(const TrainingCost& c) {
    nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
    std::vector<std::optional<hw::SourcedFigure>> always;
    for (const InputRow& row : input_rows(c, always)) {
        const auto& f = *row.figure;
        inputs[row.json_name] = f ? nlohmann::ordered_json{{"value", f->value}, {"source", f->source}}
                                  : nlohmann::ordered_json(nullptr);
    }
    return {{"hours", c.hours},
            {"rented_usd", optional_number(c.rented_usd)},
            {"owned_usd", optional_number(c.owned_usd)},
            {"owned_capex_usd", optional_number(c.owned_capex_usd)},
            {"owned_energy_kwh", optional_number(c.owned_energy_kwh)},
            {"owned_energy_usd", optional_number(c.owned_energy_usd)},
            {"inputs", inputs}};
}

std::vector<std::string> cost_csv_columns(const std::string& prefix) {
    std::vector<std::string> columns;
    for (const char* cost : {"rented_usd", "owned_usd", "owned_capex_usd", "owned_energy_kwh", "owned_energy_usd"})
        columns.push_back(fmt::format("{}.{}", prefix, cost));
    TrainingCost none;
    std::vector<std::optional<hw::SourcedFigure>> always;
    for (const InputRow& row : input_rows(none, always))
        for (const char* part : {"value", "source"})
            columns.push_back(fmt::format("{}.inputs.{}.{}", prefix, row.json_name, part));
    return columns;
}

std::string missing_input_cell(const nlohmann::ordered_json& row, const std::string& dotted_column) {
    const std::string suffix = ".source";
    const auto inputs = dotted_column.rfind(".inputs.");
    if (inputs == std::string::npos || !dotted_column.ends_with(suffix)) return "";
    std::string pointer(dotted_column.begin(), dotted_column.end() - static_cast<std::ptrdiff_t>(suffix.size()));
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    pointer.insert(pointer.begin(), '/');
    const nlohmann::ordered_json::json_pointer input(pointer);
    if (!row.contains(input) || !row.at(input).is_null()) return "";
    const std::string name = dotted_column.substr(inputs + 8, dotted_column.size() - suffix.size() - inputs - 8);
    TrainingCost none;
    std::vector<std::optional<hw::SourcedFigure>> always;
    for (const InputRow& r : input_rows(none, always))
        if (name == r.json_name) return fmt::format("no {} in the catalog for this GPU; set {}", r.label, r.key);
    return "";
}

}  // namespace cuboid::cli
