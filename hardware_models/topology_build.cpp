// Construction of the topology graph from resolved cluster parameters.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"
#include "hardware_models/topology.hpp"
#include "hardware_models/topology_kinds.hpp"

namespace cuboid::hw {

std::optional<std::string> scale_up_domain_problem(const ClusterSpec& spec) {
    if (!spec.scale_up_domain) return std::nullopt;
    const int domain = *spec.scale_up_domain, per_node = spec.gpus_per_node;
    const std::string allowed =
        fmt::format("allowed: a multiple of gpus_per_node {} that divides the cluster's {} GPUs", per_node, spec.gpus());
    if (domain < per_node)
        return fmt::format("{} GPUs per NVLink domain is smaller than a node of {} GPUs; {}", domain, per_node, allowed);
    if (domain % per_node != 0)
        return fmt::format("{} GPUs is not a whole number of nodes of {} GPUs; {}", domain, per_node, allowed);
    if (spec.gpus() % domain != 0)
        return fmt::format("{} does not divide the cluster's {} GPUs (nodes {} x gpus_per_node {}); {}", domain,
                           spec.gpus(), spec.nodes, per_node, allowed);
    if (domain > per_node && spec.intra_node != IntraNodeKind::NvSwitch)
        return fmt::format("an NVLink domain across nodes needs NVLink switches (cluster.intra_node: nvswitch), not {}",
                           spec.intra_node == IntraNodeKind::Pcie ? "pcie" : "nvlink-mesh");
    return std::nullopt;
}

TopologyParams TopologyParams::resolve(const ClusterSpec& spec, const GpuSpec& gpu,
                                       const Catalog& catalog) {
    auto fail = [](const char* key, const std::string& msg) { throw InputError({"", 0, key}, msg); };
    if (spec.nodes < 1) fail("cluster.nodes", "must be >= 1");
    if (spec.gpus_per_node < 1) fail("cluster.gpus_per_node", "must be >= 1");
    if (spec.nodes > 1 && spec.nics_per_node < 1) fail("cluster.inter_node.nics_per_node", "must be >= 1");
    if (spec.nodes > 1 && !(spec.nic_gbps > 0.0)) fail("cluster.inter_node.nic_gbps", "must be > 0");
    if (!(spec.oversubscription >= 1.0)) fail("cluster.inter_node.oversubscription", "must be >= 1");
    if (spec.intra_node_gbps && !(*spec.intra_node_gbps > 0.0)) fail("cluster.intra_node_gbps", "must be > 0");
    // The topology holds a vertex and links per GPU and per NIC: bounded before any is built, so
    // that a mistyped count is refused at once instead of filling memory.
    if (spec.gpus() > kMaxClusterGpus)
        fail("cluster.nodes", fmt::format("nodes {} x gpus_per_node {} = {} GPUs; cuboid models at most {} GPUs",
                                          spec.nodes, spec.gpus_per_node, spec.gpus(), kMaxClusterGpus));
    if (spec.nodes > 1 && std::int64_t{spec.nodes} * spec.nics_per_node > kMaxClusterNics)
        fail("cluster.inter_node.nics_per_node",
             fmt::format("nodes {} x nics_per_node {} = {} NICs; cuboid models at most {} NICs", spec.nodes,
                         spec.nics_per_node, std::int64_t{spec.nodes} * spec.nics_per_node, kMaxClusterNics));
    if (const auto problem = scale_up_domain_problem(spec)) fail("cluster.scale_up_domain", *problem);
    const NodeKindSpec& node = catalog.node_kind(spec.intra_node);
    const NetworkKindSpec& net = catalog.network_kind(spec.inter_node);
    TopologyParams p;
    p.nodes = spec.nodes;
    p.gpus_per_node = spec.gpus_per_node;
    p.nodes_per_domain = spec.domain_gpus() / spec.gpus_per_node;
    p.intra = spec.intra_node;
    p.host_link = gpu.host_link_bandwidth;
    const BytesPerSecond fabric = spec.intra_node == IntraNodeKind::Pcie ? gpu.host_link_bandwidth
                                                                         : gpu.scaleup_bandwidth;
    p.gpu_link = spec.intra_node_gbps ? gigabytes_per_second(*spec.intra_node_gbps) : fabric;
    if (p.gpus_per_node > 1 && !(p.gpu_link.value > 0.0))
        fail("cluster.intra_node", fmt::format("{} has no {} bandwidth in the catalog; give intra_node_gbps",
                                               gpu.name, node.name));
    p.gpus_per_pcie_switch = std::max(1, node.gpus_per_switch);
    p.nics_per_node = std::max(1, spec.nics_per_node);
    p.nic = gigabits_per_second(spec.nic_gbps);
    p.topology = spec.topology;
    p.oversubscription = spec.oversubscription;
    p.switch_radix = net.generation_for(spec.nic_gbps).switch_radix;
    return p;
}

int TopologyParams::leaf_down_ports() const {
    const double o = oversubscription;
    return std::max(1, static_cast<int>(std::floor(switch_radix * o / (1.0 + o))));
}

int TopologyParams::leaf_up_ports() const {
    return std::max(1, static_cast<int>(std::ceil(leaf_down_ports() / oversubscription - 1e-9)));
}

int TopologyParams::leaf_of_nic(int nic) const {
    return topology_kind(topology).leaf_of_nic(nic, leaf_down_ports(), nics_per_node);
}

int TopologyParams::leaf_port_of_nic(int nic) const {
    return topology_kind(topology).leaf_port_of_nic(nic, leaf_down_ports(), nics_per_node);
}

struct TopologyBuilder {
    Topology& t;
    using Vertex = TopologyGraph::vertex_descriptor;

    Vertex vertex(VertexKind kind, int node, int index) {
        return boost::add_vertex(TopologyVertex{kind, node, index}, t.graph_);
    }
    sim::LinkId link(Vertex from, Vertex to, BytesPerSecond bw, LinkClass cls, std::string name) {
        const auto id = static_cast<sim::LinkId>(t.links_.size());
        boost::add_edge(from, to, TopologyEdge{id}, t.graph_);
        t.links_.push_back({std::move(name), bw});
        t.classes_.push_back(cls);
        t.link_target_.push_back(to);
        return id;
    }
    void duplex(Vertex a, Vertex b, BytesPerSecond bw, LinkClass cls, const std::string& na,
                const std::string& nb) {
        link(a, b, bw, cls, na + "->" + nb);
        link(b, a, bw, cls, nb + "->" + na);
    }
    std::string gpu_name(int gpu) const {
        const int g = t.params_.gpus_per_node;
        return fmt::format("n{}.gpu{}", gpu / g, gpu % g);
    }

    void build_node(int node);
    void build_domain_switch(int domain);
    void build_nics();
    void build_network(const std::vector<Vertex>& nics);
    void connect_leaves_to_spines(const std::vector<Vertex>& leaves, int up);
};

void TopologyBuilder::build_domain_switch(int domain) {
    const TopologyParams& p = t.params_;
    const int first_node = domain * p.nodes_per_domain;
    const int first = first_node * p.gpus_per_node, gpus = p.nodes_per_domain * p.gpus_per_node;
    // One logical switch for the domain (NVL72: 18 NVLink switch chips, each GPU linked to every
    // one; together non-blocking), owned by the domain's first node for routing.
    const Vertex sw = vertex(VertexKind::NvSwitch, first_node, 0);
    const std::string sn = fmt::format("d{}.nvswitch", domain);
    for (int i = 0; i < gpus; ++i) duplex(first + i, sw, p.gpu_link, LinkClass::NvLink, gpu_name(first + i), sn);
}

void TopologyBuilder::build_node(int node) {
    const TopologyParams& p = t.params_;
    const int g = p.gpus_per_node;
    const int first = node * g;
    if (p.nodes_per_domain > 1) return;  // the domain's switch joins the node's GPUs (build_domain_switch)
    if (p.intra == IntraNodeKind::NvSwitch && g > 1) {
        const Vertex sw = vertex(VertexKind::NvSwitch, node, 0);
        const std::string sn = fmt::format("n{}.nvswitch", node);
        for (int i = 0; i < g; ++i) duplex(first + i, sw, p.gpu_link, LinkClass::NvLink, gpu_name(first + i), sn);
    } else if (p.intra == IntraNodeKind::NvLinkMesh) {
        const BytesPerSecond pair = p.gpu_link / static_cast<double>(std::max(1, g - 1));
        for (int a = 0; a < g; ++a)
            for (int b = 0; b < g; ++b)
                if (a != b) link(first + a, first + b, pair, LinkClass::NvLink,
                                 gpu_name(first + a) + "->" + gpu_name(first + b));
    } else if (p.intra == IntraNodeKind::Pcie && g > 1) {
        const Vertex host = vertex(VertexKind::Host, node, 0);
        const std::string hn = fmt::format("n{}.host", node);
        const int per = p.gpus_per_pcie_switch;
        for (int s = 0; s * per < g; ++s) {
            const Vertex sw = vertex(VertexKind::PcieSwitch, node, s);
            const std::string sn = fmt::format("n{}.pcie{}", node, s);
            duplex(sw, host, p.host_link, LinkClass::Pcie, sn, hn);
            for (int i = s * per; i < std::min(g, (s + 1) * per); ++i)
                duplex(first + i, sw, p.gpu_link, LinkClass::Pcie, gpu_name(first + i), sn);
        }
    }
}

void TopologyBuilder::build_nics() {
    const TopologyParams& p = t.params_;
    const int g = p.gpus_per_node, m = p.nics_per_node;
    std::vector<Vertex> nics;
    t.nic_of_gpu_.resize(t.gpus());
    t.gpu_to_nic_.resize(t.gpus());
    t.nic_to_gpu_.resize(t.gpus());
    for (int node = 0; node < p.nodes; ++node) {
        const std::size_t base = nics.size();
        for (int k = 0; k < m; ++k) nics.push_back(vertex(VertexKind::Nic, node, k));
        for (int i = 0; i < g; ++i) {
            const int gpu = node * g + i;
            const int k = static_cast<int>(static_cast<long>(i) * m / g);
            const Vertex nic = nics[base + k];
            const std::string nn = fmt::format("n{}.nic{}", node, k);
            t.nic_of_gpu_[gpu] = nic;
            t.gpu_to_nic_[gpu] = link(gpu, nic, p.host_link, LinkClass::Pcie, gpu_name(gpu) + "->" + nn);
            t.nic_to_gpu_[gpu] = link(nic, gpu, p.host_link, LinkClass::Pcie, nn + "->" + gpu_name(gpu));
        }
    }
    build_network(nics);
}

void TopologyBuilder::connect_leaves_to_spines(const std::vector<Vertex>& leaves, int up) {
    if (leaves.size() < 2) return;
    const TopologyParams& p = t.params_;
    for (int s = 0; s < up; ++s) {
        const Vertex spine = vertex(VertexKind::Spine, -1, s);
        for (const Vertex leaf : leaves) {
            const auto& lv = t.graph_[leaf];
            duplex(leaf, spine, p.nic, LinkClass::Network, fmt::format("leaf{}", lv.index),
                   fmt::format("spine{}", s));
        }
    }
}

void TopologyBuilder::build_network(const std::vector<Vertex>& nics) {
    const TopologyParams& p = t.params_;
    const int total = static_cast<int>(nics.size());
    std::vector<Vertex> leaves;
    auto leaf_for = [&](int index) {
        while (static_cast<int>(leaves.size()) <= index)
            leaves.push_back(vertex(VertexKind::Leaf, -1, static_cast<int>(leaves.size())));
        return leaves[index];
    };
    for (int i = 0; i < total; ++i) {
        const int leaf = p.leaf_of_nic(i);
        const TopologyVertex nv = t.graph_[nics[i]];  // a copy: leaf_for may add a vertex and move the storage
        duplex(nics[i], leaf_for(leaf), p.nic, LinkClass::Network,
               fmt::format("n{}.nic{}", nv.node, nv.index), fmt::format("leaf{}", leaf));
    }
    connect_leaves_to_spines(leaves, p.leaf_up_ports());
}

Topology Topology::build(const TopologyParams& params) {
    Topology t;
    t.params_ = params;
    TopologyBuilder b{t};
    for (int gpu = 0; gpu < t.gpus(); ++gpu) b.vertex(VertexKind::Gpu, gpu / params.gpus_per_node, gpu);
    for (int node = 0; node < params.nodes; ++node) b.build_node(node);
    if (params.nodes_per_domain > 1)
        for (int d = 0; d < params.nodes / params.nodes_per_domain; ++d) b.build_domain_switch(d);
    if (params.nodes > 1) b.build_nics();
    return t;
}

}  // namespace cuboid::hw
