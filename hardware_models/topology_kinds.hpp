// The scale-out network topologies as one descriptor table: a row per topology with its scenario
// word, its one-line meaning and where it puts each NIC (its leaf switch and the port there). The
// parser, `cuboid list topologies` and the topology builder read it, so a new two-level topology
// is a row here.
#pragma once

#include <span>

#include "hardware_models/cluster_spec.hpp"

namespace cuboid::hw {

struct TopologyKind {
    NetworkTopology value;
    const char* name;     // the scenario word (cluster.inter_node.topology)
    const char* meaning;  // one line, as the network model builds it
    // The leaf switch of NIC `nic` (numbered node by node, `nics_per_node` each) when a leaf has
    // `down` NIC ports, and the NIC's port on it.
    int (*leaf_of_nic)(int nic, int down, int nics_per_node);
    int (*leaf_port_of_nic)(int nic, int down, int nics_per_node);
};

std::span<const TopologyKind> topology_kinds();
const TopologyKind& topology_kind(NetworkTopology t);  // std::logic_error for a value with no row

}  // namespace cuboid::hw
