#include "strategies/training_cost.hpp"

#include <fmt/format.h>

namespace cuboid {

double rented_cost_usd(double gpus, double hours, double usd_per_gpu_hour) { return gpus * hours * usd_per_gpu_hour; }

double owned_capex_usd(double gpus, double hours, double purchase_usd_per_gpu, double amortisation_years,
                       double utilisation) {
    // Straight-line amortisation: a year of the machines' life costs price / years; the training
    // holds them `hours`, and each useful hour carries the idle ones (1 / utilisation).
    return gpus * purchase_usd_per_gpu * hours / (amortisation_years * kHoursPerYear * utilisation);
}

double facility_energy_kwh(double nodes, double node_power_kw, double pue, double hours) {
    return nodes * node_power_kw * pue * hours;
}

CostInputs resolve_cost_inputs(const Scenario& sc, const hw::Economics& economics) {
    const std::string file = sc.source_file.empty() ? "the scenario" : sc.source_file;
    auto typed = [&](const std::optional<double>& v, const char* key) -> std::optional<hw::SourcedFigure> {
        if (!v) return std::nullopt;
        return hw::SourcedFigure{*v, fmt::format("cost.{} in {}", key, file)};
    };
    const hw::GpuEconomics* gpu = economics.find(sc.cluster.gpu);
    CostInputs in;
    in.gpu_hour_usd = typed(sc.cost.gpu_hour_usd, "gpu_hour_usd");
    if (!in.gpu_hour_usd && gpu) in.gpu_hour_usd = gpu->cloud_usd_per_gpu_hour;
    in.purchase_usd_per_gpu = typed(sc.cost.gpu_purchase_usd, "gpu_purchase_usd");
    if (!in.purchase_usd_per_gpu && gpu) in.purchase_usd_per_gpu = gpu->purchase_usd_per_gpu;
    in.node_power_kw = typed(sc.cost.node_power_kw, "node_power_kw");
    if (!in.node_power_kw && gpu && gpu->system_power) {
        const hw::SystemPower& p = *gpu->system_power;
        const int per_node = sc.cluster.gpus_per_node;
        in.node_power_kw = hw::SourcedFigure{p.kw.value / p.gpus * per_node,
                                             fmt::format("{} x {} GPUs per node / {}", p.kw.source, per_node, p.gpus)};
    }
    const hw::OwnershipDefaults& d = economics.defaults;
    in.power_usd_per_kwh = typed(sc.cost.power_usd_per_kwh, "power_usd_per_kwh").value_or(d.power_usd_per_kwh);
    in.pue = typed(sc.cost.pue, "pue").value_or(d.pue);
    in.amortisation_years = typed(sc.cost.amortisation_years, "amortisation_years").value_or(d.amortisation_years);
    in.utilisation = typed(sc.cost.utilisation, "utilisation").value_or(d.utilisation);
    return in;
}

TrainingCost training_cost(const CostInputs& in, double gpus, double nodes, double seconds) {
    TrainingCost c;
    c.inputs = in;
    c.hours = seconds / 3600.0;
    if (in.gpu_hour_usd) c.rented_usd = rented_cost_usd(gpus, c.hours, in.gpu_hour_usd->value);
    if (in.purchase_usd_per_gpu)
        c.owned_capex_usd = owned_capex_usd(gpus, c.hours, in.purchase_usd_per_gpu->value,
                                            in.amortisation_years.value, in.utilisation.value);
    if (in.node_power_kw) {
        c.owned_energy_kwh = facility_energy_kwh(nodes, in.node_power_kw->value, in.pue.value, c.hours);
        c.owned_energy_usd = *c.owned_energy_kwh * in.power_usd_per_kwh.value;
    }
    if (c.owned_capex_usd && c.owned_energy_usd) c.owned_usd = *c.owned_capex_usd + *c.owned_energy_usd;
    return c;
}

}  // namespace cuboid
