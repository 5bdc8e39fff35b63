#include "hardware_models/economics.hpp"

#include "hardware_models/yaml_reader.hpp"

namespace cuboid::hw {
namespace {

SourcedFigure figure(const YamlReader& r) {
    SourcedFigure f{r.number("value"), r.text("source")};
    if (!(f.value >= 0.0)) r.at("value").fail("expected a number >= 0");
    if (f.source.empty()) r.at("source").fail("expected where the figure comes from");
    return f;
}

std::optional<SourcedFigure> optional_figure(const YamlReader& entry, const std::string& key) {
    const auto r = entry.find(key);
    if (!r) return std::nullopt;
    return figure(*r);
}

}  // namespace

const GpuEconomics* Economics::find(const std::string& gpu) const {
    for (const GpuEconomics& g : gpus)
        if (g.gpu == gpu) return &g;
    return nullptr;
}

Economics Economics::parse(const std::string& text, const std::string& file) {
    const YamlReader root = YamlReader::parse(text, file);
    Economics e;
    const YamlReader d = root.at("defaults");
    e.defaults = {figure(d.at("power_usd_per_kwh")), figure(d.at("pue")), figure(d.at("amortisation_years")),
                  figure(d.at("utilisation"))};
    for (const YamlReader& entry : root.at("gpus").items()) {
        GpuEconomics g;
        g.gpu = entry.text("gpu");
        g.cloud_usd_per_gpu_hour = optional_figure(entry, "cloud_usd_per_gpu_hour");
        g.purchase_usd_per_gpu = optional_figure(entry, "purchase_usd_per_gpu");
        if (const auto p = entry.find("system_power_kw")) {
            const int gpus = p->integer("gpus");
            if (gpus <= 0) p->at("gpus").fail("expected the system's GPUs, > 0");
            g.system_power = SystemPower{figure(*p), gpus};
        }
        e.gpus.push_back(std::move(g));
    }
    return e;
}

const Economics& Economics::builtin() {
    // Immutable data compiled into the binary: parsed on first use, shared read-only after.
    static const Economics parsed = parse(std::string(builtin_economics_text()), "hardware_models/catalog/economics.yaml");
    return parsed;
}

}  // namespace cuboid::hw
