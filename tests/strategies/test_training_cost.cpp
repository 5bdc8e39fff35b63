// The two costs of training in closed form, and where their inputs come from: the scenario's
// cost keys over the catalog's cited figures (catalog/economics.yaml) over its defaults.
#include <catch2/catch.hpp>

#include "hardware_models/economics.hpp"
#include "strategies/training_cost.hpp"

using namespace cuboid;

TEST_CASE("rented cost is GPUs x hours x price per GPU-hour", "[cost]") {
    CHECK(rented_cost_usd(512, 100.0, 2.5) == Approx(128000.0));
    CHECK(rented_cost_usd(8, 0.0, 6.88) == 0.0);
}

TEST_CASE("owned capex is the purchase price's share of the amortisation period the training holds", "[cost]") {
    // A whole year of a one-year life at full use costs the whole price.
    CHECK(owned_capex_usd(8, kHoursPerYear, 30000.0, 1.0, 1.0) == Approx(8 * 30000.0));
    // 100 hours of a 5-year life: 100 / (5 x 8766) of the price.
    CHECK(owned_capex_usd(1024, 100.0, 40000.0, 5.0, 1.0) == Approx(1024 * 40000.0 * 100.0 / (5.0 * 8766.0)));
    // Half the life idle: each useful hour carries one idle hour, twice the share.
    CHECK(owned_capex_usd(8, 10.0, 30000.0, 5.0, 0.5) == Approx(2.0 * owned_capex_usd(8, 10.0, 30000.0, 5.0, 1.0)));
}

TEST_CASE("facility energy is nodes x node power x PUE x hours", "[cost]") {
    CHECK(facility_energy_kwh(2, 10.0, 1.5, 10.0) == Approx(300.0));
}

TEST_CASE("training_cost adds capex and energy and leaves out what lacks an input", "[cost]") {
    CostInputs in;
    in.gpu_hour_usd = hw::SourcedFigure{2.0, "a"};
    in.purchase_usd_per_gpu = hw::SourcedFigure{30000.0, "b"};
    in.node_power_kw = hw::SourcedFigure{10.0, "c"};
    in.power_usd_per_kwh = {0.1, "d"};
    in.pue = {1.5, "e"};
    in.amortisation_years = {5.0, "f"};
    in.utilisation = {0.8, "g"};
    const double seconds = 36000.0;  // 10 hours
    const TrainingCost c = training_cost(in, 16, 2, seconds);
    CHECK(c.hours == Approx(10.0));
    CHECK(*c.rented_usd == Approx(16 * 10.0 * 2.0));
    const double capex = 16 * 30000.0 * 10.0 / (5.0 * 8766.0 * 0.8);
    CHECK(*c.owned_capex_usd == Approx(capex));
    CHECK(*c.owned_energy_kwh == Approx(2 * 10.0 * 1.5 * 10.0));
    CHECK(*c.owned_energy_usd == Approx(300.0 * 0.1));
    CHECK(*c.owned_usd == Approx(capex + 30.0));

    in.purchase_usd_per_gpu.reset();
    in.gpu_hour_usd.reset();
    const TrainingCost partial = training_cost(in, 16, 2, seconds);
    CHECK_FALSE(partial.rented_usd);
    CHECK_FALSE(partial.owned_capex_usd);
    CHECK_FALSE(partial.owned_usd);
    CHECK(partial.owned_energy_kwh);  // energy needs only the node power
}

TEST_CASE("cost inputs: the scenario's keys, else the catalog's figures of the GPU, else its defaults", "[cost]") {
    const hw::Economics& e = hw::Economics::builtin();
    Scenario s;
    s.source_file = "s.yaml";
    s.cluster.gpu = "h100-sxm-80gb";
    s.cluster.gpus_per_node = 8;
    CostInputs in = resolve_cost_inputs(s, e);
    REQUIRE(in.gpu_hour_usd);
    CHECK(in.gpu_hour_usd->value == e.find("h100-sxm-80gb")->cloud_usd_per_gpu_hour->value);
    CHECK(in.gpu_hour_usd->source.find("2026-11-09") != std::string::npos);  // dated
    REQUIRE(in.purchase_usd_per_gpu);
    REQUIRE(in.node_power_kw);
    CHECK(in.node_power_kw->value == Approx(10.2));  // DGX H100, 8 GPUs per node
    CHECK(in.pue.value == e.defaults.pue.value);
    CHECK(in.pue.source == e.defaults.pue.source);

    s.cost.gpu_hour_usd = 1.5;
    s.cost.pue = 1.2;
    s.cost.utilisation = 0.7;
    in = resolve_cost_inputs(s, e);
    CHECK(in.gpu_hour_usd->value == 1.5);
    CHECK(in.gpu_hour_usd->source == "cost.gpu_hour_usd in s.yaml");
    CHECK(in.pue.value == 1.2);
    CHECK(in.utilisation.source == "cost.utilisation in s.yaml");

    // A rack-scale system's power per node: the rack's power / its GPUs x the node's GPUs.
    Scenario nvl;
    nvl.cluster.gpu = "gb200-nvl72-186gb";
    nvl.cluster.gpus_per_node = 4;
    const CostInputs rack = resolve_cost_inputs(nvl, e);
    REQUIRE(rack.node_power_kw);
    CHECK(rack.node_power_kw->value == Approx(120.0 / 72 * 4));
    CHECK_FALSE(rack.gpu_hour_usd);  // no cloud price read for GB200: none, not a guess

    // A GPU the economics file has no entry for: every GPU-specific input is missing.
    Scenario other;
    other.cluster.gpu = "h20-96gb";
    const CostInputs none = resolve_cost_inputs(other, e);
    CHECK_FALSE(none.gpu_hour_usd);
    CHECK_FALSE(none.purchase_usd_per_gpu);
    CHECK_FALSE(none.node_power_kw);
}

TEST_CASE("every figure of the economics file has a source and names a catalog GPU", "[cost]") {
    const hw::Economics& e = hw::Economics::builtin();
    for (const hw::SourcedFigure* d : {&e.defaults.power_usd_per_kwh, &e.defaults.pue, &e.defaults.amortisation_years,
                                       &e.defaults.utilisation})
        CHECK_FALSE(d->source.empty());
    CHECK(e.defaults.pue.value >= 1.0);
    CHECK(e.defaults.utilisation.value > 0.0);
    CHECK(e.defaults.utilisation.value <= 1.0);
    for (const hw::GpuEconomics& g : e.gpus) {
        INFO(g.gpu);
        for (const auto* f : {&g.cloud_usd_per_gpu_hour, &g.purchase_usd_per_gpu})
            if (*f) CHECK_FALSE((*f)->source.empty());
        if (g.system_power) CHECK(g.system_power->gpus > 0);
    }
}
