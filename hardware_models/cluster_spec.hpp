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

// The rack-scale system a GPU is sold in (GB200 / GB300 NVL72), from the GPU catalog: the cluster
// layout a scenario gets for the keys it leaves out. A GPU sold as a part (an HGX board's B200)
// has none, and the cluster keys' own defaults apply.
struct GpuSystem {
    std::string name;         // "GB200 NVL72"
    int gpus_per_node = 0;    // GPUs per compute tray
    int scale_up_domain = 0;  // GPUs per NVLink domain (a rack)
    int nics_per_node = 0;    // scale-out NICs per tray
    double nic_gbps = 0.0;    // per NIC, one direction
};

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
    // GPUs per NVLink domain (rack-scale NVLink: GB200 NVL72's 18 trays of 4 GPUs on NVLink switches
    // are one domain of 72); absent: one node. A multiple of gpus_per_node that divides the GPUs.
    std::optional<int> scale_up_domain;
    // Memory bandwidth of one node's host CPUs (GB/s, as a STREAM-like copy achieves it), shared by
    // its GPUs' processes: what an optimizer step offloaded to the host runs at. Absent: unknown.
    std::optional<double> host_memory_gb_per_s;

    // 64-bit: 65,536 nodes of 65,536 GPUs must read as 2^32 GPUs (and be refused), not wrap.
    std::int64_t gpus() const { return std::int64_t{nodes} * gpus_per_node; }
    int domain_gpus() const { return scale_up_domain.value_or(gpus_per_node); }
};

// Why cluster.scale_up_domain cannot be (smaller than a node, not whole nodes, not dividing the
// GPUs, across nodes without NVLink switches), or nullopt when it can; absent is always fine.
std::optional<std::string> scale_up_domain_problem(const ClusterSpec& spec);

}  // namespace cuboid::hw
