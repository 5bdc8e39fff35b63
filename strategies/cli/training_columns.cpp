#include "strategies/cli/training_columns.hpp"

#include <optional>

#include <fmt/format.h>

#include "strategies/cli/cost_report.hpp"

namespace cuboid::cli {
namespace {

constexpr double kSecondsPerDay = 86400.0;

std::string cell(const std::optional<double>& value, double scale, int width, const char* format) {
    if (!value) return fmt::format("  {:>{}}", "-", width);
    return fmt::format("  {:>{}}", fmt::format(fmt::runtime(format), *value * scale), width);
}

}  // namespace

TrainingColumns::TrainingColumns(std::span<const RunResult* const> rows) {
    for (const RunResult* r : rows) {
        days_ = days_ || r->time_to_train_s.has_value();
        cost_ = cost_ || r->cost_usd.has_value();
        energy_ = energy_ || r->energy_kwh.has_value();
        if (!r->training_cost) continue;
        rented_ = rented_ || r->training_cost->rented_usd.has_value();
        owned_ = owned_ || r->training_cost->owned_usd.has_value();
        if (cost_inputs_.empty()) {
            // The input lines of the report (after its two cost lines), under the table.
            const std::vector<std::string> lines = cost_lines(*r->training_cost, "");
            for (std::size_t i = 2; i < lines.size(); ++i) cost_inputs_ += "\n" + lines[i];
        }
    }
}

std::string TrainingColumns::header() const {
    std::string h;
    if (days_) h += fmt::format("  {:>7}  {:>12}", "days", "w/ failures");
    if (cost_) h += fmt::format("  {:>9}", "cost USD");
    if (energy_) h += fmt::format("  {:>10}", "energy MWh");
    if (rented_) h += fmt::format("  {:>10}", "rented USD");
    if (owned_) h += fmt::format("  {:>9}", "owned USD");
    return h;
}

std::string TrainingColumns::cells(const RunResult& r) const {
    std::string c;
    if (days_) {
        c += cell(r.time_to_train_s, 1.0 / kSecondsPerDay, 7, "{:.3g}");
        const std::optional<double> effective = r.goodput ? r.goodput->effective_time_to_train_s : std::nullopt;
        c += cell(effective, 1.0 / kSecondsPerDay, 12, "{:.3g}");
    }
    if (cost_) c += cell(r.cost_usd, 1.0, 9, "{:.3g}");
    if (energy_) c += cell(r.energy_kwh, 1.0 / 1000.0, 10, "{:.3g}");
    const TrainingCost* t = r.training_cost ? &*r.training_cost : nullptr;
    if (rented_) c += cell(t ? t->rented_usd : std::nullopt, 1.0, 10, "{:.3g}");
    if (owned_) c += cell(t ? t->owned_usd : std::nullopt, 1.0, 9, "{:.3g}");
    return c;
}

std::string TrainingColumns::legend() const {
    if (!any()) return {};
    std::string text = "days: training.tokens / tokens per second; w/ failures: the same with failures, "
                       "checkpoints and restarts (the report's goodput line)";
    if (cost_) text += "; cost: GPUs x hours x cost.gpu_hour_usd";
    if (energy_) text += "; energy: nodes x cost.node_power_kw x hours";
    if (rented_ || owned_)
        text += "; rented: GPU-hours x price per GPU-hour; owned: purchase price x hours / (amortisation years x "
                "8766 h x utilisation) + nodes x node power x PUE x hours x power price (docs/scenario.md, cost), "
                "with:" + cost_inputs_;
    return text;
}

}  // namespace cuboid::cli
