// What training costs, two ways (docs/scenario.md, section cost):
//   rented: GPU-hours x a cloud price per GPU-hour;
//   owned:  the purchase price's share of the machines' useful life the training takes
//           (GPUs x price x hours / (amortisation years x hours per year x utilisation))
//           + the facility's energy (nodes x node power x PUE x hours) x the power price.
// Every input carries where its value came from (the scenario's key, or the catalog's cited
// figure, catalog/economics.yaml), for the report; an input nobody gives is left out and the cost
// that needs it is not computed.
#pragma once

#include <optional>
#include <string>

#include "hardware_models/economics.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

inline constexpr double kHoursPerYear = 365.25 * 24.0;

double rented_cost_usd(double gpus, double hours, double usd_per_gpu_hour);
// The purchase price's share that `hours` of the machines' amortisation period carry.
double owned_capex_usd(double gpus, double hours, double purchase_usd_per_gpu, double amortisation_years,
                       double utilisation);
// Energy the facility draws: the nodes' power x PUE x hours.
double facility_energy_kwh(double nodes, double node_power_kw, double pue, double hours);

struct CostInputs {
    std::optional<hw::SourcedFigure> gpu_hour_usd;        // rented
    std::optional<hw::SourcedFigure> purchase_usd_per_gpu; // owned: capex
    std::optional<hw::SourcedFigure> node_power_kw;        // owned: energy
    hw::SourcedFigure power_usd_per_kwh;
    hw::SourcedFigure pue;
    hw::SourcedFigure amortisation_years;
    hw::SourcedFigure utilisation;
};

// The scenario's cost keys where it gives them ("cost.X in FILE"), else the catalog's figures for
// its GPU (node power scaled from the vendor's system to the scenario's GPUs per node), else the
// defaults of the catalog.
CostInputs resolve_cost_inputs(const Scenario& sc, const hw::Economics& economics);

struct TrainingCost {
    CostInputs inputs;
    double hours = 0.0;                       // the training time the costs are for
    std::optional<double> rented_usd;         // without a price per GPU-hour: not known
    std::optional<double> owned_capex_usd;    // without a purchase price: not known
    std::optional<double> owned_energy_kwh;   // without a node power: not known
    std::optional<double> owned_energy_usd;
    std::optional<double> owned_usd;          // capex + energy cost, when both are known
};

TrainingCost training_cost(const CostInputs& in, double gpus, double nodes, double seconds);

}  // namespace cuboid
