// The hardware catalog: GPUs, intra-node fabrics, networks and NCCL's cost constants, read from
// YAML data files (hardware_models/catalog/*.yaml, embedded into the library at build time).
// Every figure carries its source in a comment of those files. A Catalog is a plain value: load
// it once and pass it to Hardware::build; nothing is registered globally.
#pragma once

#include <string>
#include <vector>

#include "hardware_models/cluster_spec.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/gpu_spec.hpp"
#include "sim/units.hpp"

namespace cuboid::hw {

// What a link is made of; decides the protocol efficiency and NCCL's per-step latency.
enum class LinkClass : std::uint8_t { NvLink, Pcie, Network };

struct NodeKindSpec {
    std::string name;  // "nvswitch" | "nvlink-mesh" | "pcie"
    IntraNodeKind kind = IntraNodeKind::NvSwitch;
    std::string description;
    LinkClass link_class = LinkClass::NvLink;
    double protocol_efficiency = 1.0;  // payload fraction of line rate (NCCL Simple)
    Time nccl_ring_step{0};            // NCCL per-step hardware latency, Simple protocol
    Time nccl_tree_step{0};
    int gpus_per_switch = 0;           // pcie: GPUs under one PCIe switch
    std::string source;
};

struct NetworkGeneration {
    std::string name;         // "hdr"
    double gbit_per_s = 0.0;  // port line rate, one direction
    int switch_radix = 0;     // ports per switch
};

struct NetworkKindSpec {
    std::string name;  // "infiniband" | "roce" | "ethernet"
    InterNodeKind kind = InterNodeKind::InfiniBand;
    std::string description;
    double protocol_efficiency = 1.0;
    Time switch_latency{0};
    std::vector<NetworkGeneration> generations;  // ascending rate
    std::string source;

    // The slowest generation at least `gbit_per_s` fast (the fastest if none is).
    const NetworkGeneration& generation_for(double gbit_per_s) const;
};

// NCCL's latency model constants, Simple protocol (hardware.md §6.3).
struct NcclConstants {
    Time ring_base{0};
    Time tree_base{0};
    Time net_ring_step{0};
    Time net_tree_step{0};
    Time net_overhead{0};
    // Tree all-reduce bandwidth factors by size class: entry i for 64 B x 2^i <= S < 64 B x 2^(i+1).
    std::vector<double> tree_allreduce_correction;
    std::string source;

    // The factor NCCL applies to a tree all-reduce of `bytes` per rank: 1 past the table's sizes.
    double tree_allreduce_factor(Bytes bytes) const;
};

// One row of `cuboid list gpus|nodes|networks`.
struct CatalogRow {
    std::string name;
    std::string description;
    std::string figures;  // key figures, "312 TFLOP/s bf16, 80 GiB, 2.04 TB/s, ..."
    std::string source;
};

enum class CatalogSection { Gpus, Nodes, Networks };

class Catalog {
public:
    // The catalog compiled into the library.
    static Catalog load_builtin();
    // gpus.yaml, nodes.yaml, networks.yaml and nccl.yaml from `dir` (errors name the file).
    static Catalog load(const std::string& dir);
    // From file contents; `origin` prefixes the file names in error messages.
    static Catalog parse(const std::string& gpus_yaml, const std::string& nodes_yaml,
                         const std::string& networks_yaml, const std::string& nccl_yaml,
                         const std::string& origin);

    // By name or alias; InputError listing the allowed names for an unknown one.
    const GpuSpec& gpu(const std::string& name) const;
    std::vector<std::string> gpu_names() const;
    const NodeKindSpec& node_kind(IntraNodeKind kind) const;
    const NodeKindSpec& node_kind(const std::string& name) const;
    const NetworkKindSpec& network_kind(InterNodeKind kind) const;
    const NetworkKindSpec& network_kind(const std::string& name) const;
    std::vector<std::string> node_kind_names() const;
    std::vector<std::string> network_kind_names() const;
    const NcclConstants& nccl() const { return nccl_; }

    const std::vector<GpuSpec>& gpus() const { return gpus_; }
    const std::vector<NodeKindSpec>& node_kinds() const { return nodes_; }
    const std::vector<NetworkKindSpec>& network_kinds() const { return networks_; }

    std::vector<CatalogRow> describe(CatalogSection section) const;

private:
    std::vector<GpuSpec> gpus_;
    std::vector<NodeKindSpec> nodes_;
    std::vector<NetworkKindSpec> networks_;
    NcclConstants nccl_;
};

// Names used in scenarios and in the catalog files.
const char* to_string(IntraNodeKind kind);
const char* to_string(InterNodeKind kind);
const char* to_string(NetworkTopology topology);
IntraNodeKind parse_intra_node_kind(const std::string& name, const InputLocation& where);
InterNodeKind parse_inter_node_kind(const std::string& name, const InputLocation& where);
NetworkTopology parse_network_topology(const std::string& name, const InputLocation& where);
// "gpus" | "nodes" | "networks" (the `cuboid list` argument).
CatalogSection parse_catalog_section(const std::string& name, const InputLocation& where);

}  // namespace cuboid::hw
