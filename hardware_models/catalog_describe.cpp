// Rows of `cuboid list gpus|nodes|networks`: name, one line, key figures and their source.
#include <fmt/format.h>

#include "hardware_models/catalog.hpp"

namespace cuboid::hw {

static std::string gpu_figures(const GpuSpec& g) {
    std::string s = fmt::format("{:.0f} TFLOP/s bf16 dense", g.peak_bf16.value / 1e12);
    if (g.peak_fp8.value > 0.0) s += fmt::format(", {:.0f} fp8", g.peak_fp8.value / 1e12);
    s += fmt::format(", {:.0f} GiB HBM at {:.2f} TB/s, {} SMs, {:.0f} W, scale-up {:.0f} GB/s/dir",
                     g.memory_capacity.value / 1073741824.0, g.memory_bandwidth.value / 1e12,
                     g.sm_count, g.tdp_watts, g.scaleup_bandwidth.value / 1e9);
    s += fmt::format(", large GEMM eff {:.2f}", g.gemm_efficiency.points.back().efficiency);
    if (g.system)
        s += fmt::format("; as {}: {} GPUs per node, NVLink domain of {} GPUs, {} x {:.0f} Gbit/s NICs per node",
                         g.system->name, g.system->gpus_per_node, g.system->scale_up_domain,
                         g.system->nics_per_node, g.system->nic_gbps);
    return s;
}

static std::string node_figures(const NodeKindSpec& n) {
    std::string s = fmt::format("protocol efficiency {:.2f}, NCCL step {:.1f} us (ring) / {:.1f} us (tree)",
                                n.protocol_efficiency, to_seconds(n.nccl_ring_step) * 1e6,
                                to_seconds(n.nccl_tree_step) * 1e6);
    if (n.gpus_per_switch > 0) s += fmt::format(", {} GPUs per PCIe switch", n.gpus_per_switch);
    return s;
}

static std::string network_figures(const NetworkKindSpec& n) {
    std::string rates;
    for (const auto& g : n.generations)
        rates += fmt::format("{}{} {:.0f} Gb/s (radix {})", rates.empty() ? "" : ", ", g.name,
                             g.gbit_per_s, g.switch_radix);
    return fmt::format("{}; efficiency {:.2f}, switch {:.2f} us", rates, n.protocol_efficiency,
                       to_seconds(n.switch_latency) * 1e6);
}

std::vector<CatalogRow> Catalog::describe(CatalogSection section) const {
    std::vector<CatalogRow> rows;
    switch (section) {
        case CatalogSection::Gpus:
            for (const auto& g : gpus_) rows.push_back({g.name, g.description, gpu_figures(g), g.source});
            break;
        case CatalogSection::Nodes:
            for (const auto& n : nodes_) rows.push_back({n.name, n.description, node_figures(n), n.source});
            break;
        case CatalogSection::Networks:
            for (const auto& n : networks_)
                rows.push_back({n.name, n.description, network_figures(n), n.source});
            break;
    }
    return rows;
}

}  // namespace cuboid::hw
