// Parsing of the catalog files' entries (one function per entry kind); used by Catalog.
#pragma once

#include <optional>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/yaml_reader.hpp"

namespace cuboid::hw {

std::optional<sim::Precision> precision_from_name(const std::string& name);
EfficiencyCurve parse_efficiency_curve(const YamlReader& r);
GpuSpec parse_gpu(const YamlReader& r);
NodeKindSpec parse_node_kind(const YamlReader& r);
NetworkKindSpec parse_network_kind(const YamlReader& r);
NcclConstants parse_nccl(const YamlReader& r);

// A number that must lie in [lo, hi].
double number_in(const YamlReader& r, const std::string& name, double lo, double hi);

}  // namespace cuboid::hw
