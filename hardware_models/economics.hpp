// What GPUs cost to rent, to buy and to power (catalog/economics.yaml), each figure with its
// source, and the cited defaults of an owned cluster's cost (power price, PUE, useful life,
// utilisation). A GPU the file gives no figure for has none here: callers say it is missing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuboid::hw {

struct SourcedFigure {
    double value = 0.0;
    std::string source;  // where the figure comes from, with its date, as shown to the user
};

struct SystemPower {
    SourcedFigure kw;    // the whole system's maximum power
    int gpus = 0;        // the GPUs of that system
};

struct GpuEconomics {
    std::string gpu;     // a catalog GPU name
    std::optional<SourcedFigure> cloud_usd_per_gpu_hour;
    std::optional<SourcedFigure> purchase_usd_per_gpu;
    std::optional<SystemPower> system_power;
};

struct OwnershipDefaults {
    SourcedFigure power_usd_per_kwh;
    SourcedFigure pue;
    SourcedFigure amortisation_years;
    SourcedFigure utilisation;
};

struct Economics {
    OwnershipDefaults defaults;
    std::vector<GpuEconomics> gpus;

    const GpuEconomics* find(const std::string& gpu) const;

    static Economics parse(const std::string& text, const std::string& file);
    // The file compiled into the binary, parsed once.
    static const Economics& builtin();
};

std::string_view builtin_economics_text();

}  // namespace cuboid::hw
