// What a scenario says about the cluster: the input of the hardware model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cuboid::hw {

enum class IntraNodeKind { NvSwitch, NvLinkMesh, Pcie };
enum class InterNodeKind { InfiniBand, Roce, Ethernet };
enum class NetworkTopology { FatTree, RailOptimized, SingleSwitch };

// The largest cluster cuboid models (plan validation and TopologyParams::resolve refuse larger
// ones before building anything): about 40 times the largest clusters trained today, and small
// enough that the topology of one fits in a few GiB.
inline constexpr std::int64_t kMaxClusterGpus = std::int64_t{1} << 22;
inline constexpr std::int64_t kMaxClusterNics = std::int64_t{1} << 22;

struct ClusterSpec {
    std::string gpu = "a100-sxm-80gb";      // a name from the GPU catalog
    int nodes = 1;
    int gpus_per_node = 8;
    IntraNodeKind intra_node = IntraNodeKind::NvSwitch;
    std::optional<double> intra_node_gbps;   // per GPU, one direction, GB/s; default from the catalog
    InterNodeKind inter_node = InterNodeKind::InfiniBand;
    double nic_gbps = 200.0;                 // per NIC, one direction, Gbit/s
    int nics_per_node = 8;
    NetworkTopology topology = NetworkTopology::FatTree;
    double oversubscription = 1.0;           // leaf down-link : up-link bandwidth ratio (>= 1)
    std::optional<std::string> profile;      // calibrated hardware profile (YAML); the loader resolves it from the scenario file's folder

    // 64-bit: 65,536 nodes of 65,536 GPUs must read as 2^32 GPUs (and be refused), not wrap.
    std::int64_t gpus() const { return std::int64_t{nodes} * gpus_per_node; }
};

}  // namespace cuboid::hw
