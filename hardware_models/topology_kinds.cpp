#include "hardware_models/topology_kinds.hpp"

#include "hardware_models/table_row.hpp"

namespace cuboid::hw {
namespace {

// Consecutive NICs fill a leaf's down ports: a node's NICs share leaves.
int leaf_in_order(int nic, int down, int) { return nic / down; }
int port_in_order(int nic, int down, int) { return nic % down; }
// NIC i of every node on rail i: the rail's leaves take one NIC of each node, down nodes a leaf.
int leaf_on_rail(int nic, int down, int m) { return (nic / m) / down * m + nic % m; }
int port_on_rail(int nic, int down, int m) { return (nic / m) % down; }
int one_switch(int, int, int) { return 0; }

constexpr TopologyKind kTopologies[] = {
    {NetworkTopology::FatTree, "fat-tree", "folded Clos; leaf up-links reduced by the oversubscription ratio",
     leaf_in_order, port_in_order},
    {NetworkTopology::RailOptimized, "rail-optimized", "NIC i of every node on leaf switch i (one rail per GPU index)",
     leaf_on_rail, port_on_rail},
    {NetworkTopology::SingleSwitch, "single-switch", "every node on one non-blocking switch", one_switch,
     port_in_order},
};

}  // namespace

std::span<const TopologyKind> topology_kinds() { return kTopologies; }

const TopologyKind& topology_kind(NetworkTopology t) { return table_row(topology_kinds(), t, "topology_kind"); }

}  // namespace cuboid::hw
