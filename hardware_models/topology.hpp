// The cluster's network as a directed graph (Boost.Graph): vertices are GPUs, NVSwitches, PCIe
// switches and hosts, NICs, leaf/rail and spine switches; every edge is one direction of a link
// and carries the sim::Link id (one sim::Link per direction, with the raw line rate).
//
// Intra-node kinds: nvswitch (each GPU has an up and a down link to one logical switch per node,
// at the GPU's scale-up rate; with a scale-up domain of several nodes, one logical switch per
// domain joins the GPUs of all its nodes, as GB200 NVL72's NVLink switch trays join its 18 compute
// trays, and traffic inside a domain never leaves NVLink), nvlink-mesh (a direct link per ordered GPU pair at per-GPU rate /
// (GPUs - 1)), pcie (GPUs under PCIe switches whose x16 up-links meet at the host).
// Inter-node: NICs (GPU i of a node uses NIC i*nics/gpus over a PCIe link), then
//   single-switch: every NIC on one switch;
//   fat-tree: leaves of radix R hold R*o/(1+o) NICs (o = oversubscription), each leaf has one
//     up-link to each of down/o spines (two levels; a spine stands for a spine plane when the
//     leaves outnumber a real switch's ports);
//   rail-optimized: NIC k of every node of a scalable unit (SU, as many nodes as a leaf has down
//     ports) on rail leaf (SU, k); rails and SUs meet at the spines (NVIDIA SuperPOD,
//     hardware.md §4.2).
// Routes are shortest paths (BFS); across the network the spine is chosen by the destination
// (D-mod-K, as InfiniBand's destination-based forwarding with fat-tree routing does), inside a
// node among equal paths by a hash of (source, destination). Link count for 384 DGX nodes on a non-blocking NDR fat tree:
// 4 x 3072 GPU/NIC/leaf links + 96 leaves x 32 spines x 2 = 18,432 + 6,144 ~ 25k.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "hardware_models/catalog.hpp"
#include "hardware_models/cluster_spec.hpp"
#include "sim/transfer.hpp"

namespace cuboid::hw {

enum class VertexKind : std::uint8_t { Gpu, NvSwitch, PcieSwitch, Host, Nic, Leaf, Spine };

struct TopologyVertex {
    VertexKind kind = VertexKind::Gpu;
    int node = -1;  // -1: a network switch shared by nodes
    int index = 0;  // GPU number, local NIC number, switch number
};

struct TopologyEdge {
    sim::LinkId link = 0;
};

using TopologyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                            TopologyVertex, TopologyEdge>;

// The cluster resolved against the catalog: every rate the graph needs.
struct TopologyParams {
    int nodes = 1;
    int gpus_per_node = 8;
    int nodes_per_domain = 1;       // nodes joined by one NVLink domain (cluster.scale_up_domain)
    IntraNodeKind intra = IntraNodeKind::NvSwitch;
    BytesPerSecond gpu_link{0.0};   // per GPU, one direction (nvswitch/mesh: scale-up; pcie: x16)
    BytesPerSecond host_link{0.0};  // GPU <-> NIC and PCIe switch <-> host
    int gpus_per_pcie_switch = 2;
    int nics_per_node = 8;
    BytesPerSecond nic{0.0};        // NIC and switch port line rate, one direction
    NetworkTopology topology = NetworkTopology::FatTree;
    double oversubscription = 1.0;
    int switch_radix = 64;

    // A leaf's ports split oversubscription : 1 between NICs (down) and spines (up).
    int leaf_down_ports() const;
    int leaf_up_ports() const;
    // Where NIC `nic` (numbered node * nics_per_node + local NIC) plugs in: its leaf, and its port
    // among that leaf's down ports. A fat-tree fills leaves in NIC order; a rail-optimized fabric
    // gives each rail (local NIC number) its own leaves, filled in node order.
    int leaf_of_nic(int nic) const;
    int leaf_port_of_nic(int nic) const;

    // Throws InputError for an impossible cluster.
    static TopologyParams resolve(const ClusterSpec& spec, const GpuSpec& gpu, const Catalog& catalog);
};

class Topology {
public:
    static Topology build(const TopologyParams& params);
    ~Topology();
    Topology(Topology&&) noexcept;
    Topology& operator=(Topology&&) noexcept;

    std::span<const sim::Link> links() const { return links_; }
    LinkClass link_class(sim::LinkId id) const { return classes_[id]; }
    const TopologyGraph& graph() const { return graph_; }
    const TopologyParams& params() const { return params_; }

    int gpus() const { return static_cast<int>(std::int64_t{params_.nodes} * params_.gpus_per_node); }  // bounded by resolve
    int node_of(std::uint32_t gpu) const { return static_cast<int>(gpu) / params_.gpus_per_node; }
    // The NVLink domain of a GPU: its node, unless the cluster's domain spans several nodes.
    int domain_of(std::uint32_t gpu) const { return node_of(gpu) / params_.nodes_per_domain; }

    // Links from GPU `src` to GPU `dst`, in order (empty when src == dst). Each pair is searched
    // once per topology and remembered, for every planner of the cluster (thread-safe); the view
    // stays valid for the topology's lifetime.
    std::span<const sim::LinkId> route(std::uint32_t src, std::uint32_t dst) const;
    // Network switches (leaf, spine) a route crosses.
    int switch_hops(std::span<const sim::LinkId> route) const;
    VertexKind link_target_kind(sim::LinkId id) const;

private:
    friend struct TopologyBuilder;
    using Vertex = TopologyGraph::vertex_descriptor;
    struct RouteCache;

    Topology();
    std::vector<sim::LinkId> search_route(std::uint32_t src, std::uint32_t dst) const;
    std::vector<sim::LinkId> bfs(Vertex src, Vertex dst, bool intra_domain, std::uint64_t seed) const;
    std::vector<sim::LinkId> network_route(Vertex src, Vertex dst, std::uint64_t seed) const;
    std::vector<std::int8_t> switch_levels(std::span<const Vertex> sources) const;
    const std::vector<std::int8_t>& levels_beyond(Vertex leaf) const;
    template <class Level>
    static std::vector<sim::LinkId> walk_back(const TopologyGraph& g, Vertex src, Vertex dst, int dst_level,
                                              const Level& level, std::uint64_t seed, Vertex second);
    bool may_cross(Vertex v, bool intra_domain, int domain) const;

    TopologyParams params_;
    TopologyGraph graph_;
    std::vector<sim::Link> links_;
    std::vector<LinkClass> classes_;
    std::vector<Vertex> link_target_;     // per link: the vertex it enters
    std::vector<Vertex> nic_of_gpu_;      // NIC vertex of each GPU (multi-node only)
    std::vector<sim::LinkId> gpu_to_nic_;  // per GPU
    std::vector<sim::LinkId> nic_to_gpu_;
    // Routes found so far. The graph never changes once built, so a route found for one
    // simulation holds for all of them: sweep points of one cluster share it (they run in
    // parallel: lookups read it without a lock, insertions take one).
    std::unique_ptr<RouteCache> routes_;
};

}  // namespace cuboid::hw
