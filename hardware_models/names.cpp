// Scenario names of the cluster enums (docs/scenario.md "Names that scripts rely on").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/name_match.hpp"
#include "hardware_models/topology_kinds.hpp"

namespace cuboid::hw {

const char* to_string(IntraNodeKind kind) {
    switch (kind) {
        case IntraNodeKind::NvSwitch: return "nvswitch";
        case IntraNodeKind::NvLinkMesh: return "nvlink-mesh";
        case IntraNodeKind::Pcie: return "pcie";
    }
    return "nvswitch";
}

const char* to_string(InterNodeKind kind) {
    switch (kind) {
        case InterNodeKind::InfiniBand: return "infiniband";
        case InterNodeKind::Roce: return "roce";
        case InterNodeKind::Ethernet: return "ethernet";
    }
    return "infiniband";
}

const char* to_string(NetworkTopology topology) { return topology_kind(topology).name; }

template <class E>
static E parse_enum(const std::string& name, std::initializer_list<E> values,
                    const InputLocation& where) {
    std::vector<std::string> allowed;
    for (E v : values) {
        if (name == to_string(v)) return v;
        allowed.emplace_back(to_string(v));
    }
    throw InputError(where, fmt::format("unknown value '{}' (allowed: {}){}", name, fmt::join(allowed, ", "),
                                        did_you_mean(name, allowed)));
}

IntraNodeKind parse_intra_node_kind(const std::string& name, const InputLocation& where) {
    return parse_enum(name, {IntraNodeKind::NvSwitch, IntraNodeKind::NvLinkMesh, IntraNodeKind::Pcie},
                      where);
}

InterNodeKind parse_inter_node_kind(const std::string& name, const InputLocation& where) {
    return parse_enum(name, {InterNodeKind::InfiniBand, InterNodeKind::Roce, InterNodeKind::Ethernet},
                      where);
}

NetworkTopology parse_network_topology(const std::string& name, const InputLocation& where) {
    std::vector<std::string> allowed;
    for (const TopologyKind& k : topology_kinds()) {
        if (name == k.name) return k.value;
        allowed.emplace_back(k.name);
    }
    throw InputError(where, fmt::format("unknown value '{}' (allowed: {}){}", name, fmt::join(allowed, ", "),
                                        did_you_mean(name, allowed)));
}

CatalogSection parse_catalog_section(const std::string& name, const InputLocation& where) {
    if (name == "gpus") return CatalogSection::Gpus;
    if (name == "nodes") return CatalogSection::Nodes;
    if (name == "networks") return CatalogSection::Networks;
    const std::vector<std::string> allowed{"gpus", "nodes", "networks"};
    throw InputError(where, fmt::format("unknown catalog section '{}' (allowed: gpus, nodes, networks){}", name,
                                        did_you_mean(name, allowed)));
}

}  // namespace cuboid::hw
