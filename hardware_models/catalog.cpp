#include "hardware_models/catalog.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hardware_models/catalog_data.hpp"
#include "hardware_models/catalog_parse.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/input_file.hpp"
#include "hardware_models/name_match.hpp"

namespace cuboid::hw {

Catalog Catalog::load_builtin() {
    const BuiltinCatalogText t = builtin_catalog_text();
    return parse(std::string(t.gpus), std::string(t.nodes), std::string(t.networks),
                 std::string(t.nccl), "<builtin>/");
}

static std::string read_file(const std::string& path) {
    return read_input_file(path, kMaxYamlFileBytes, "catalog file");
}

Catalog Catalog::load(const std::string& dir) {
    const std::string d = dir.empty() || dir.back() == '/' ? dir : dir + "/";
    return parse(read_file(d + "gpus.yaml"), read_file(d + "nodes.yaml"),
                 read_file(d + "networks.yaml"), read_file(d + "nccl.yaml"), d);
}

Catalog Catalog::parse(const std::string& gpus_yaml, const std::string& nodes_yaml,
                       const std::string& networks_yaml, const std::string& nccl_yaml,
                       const std::string& origin) {
    Catalog c;
    const auto gpus = YamlReader::parse(gpus_yaml, origin + "gpus.yaml");
    for (const auto& item : gpus.at("gpus").items()) c.gpus_.push_back(parse_gpu(item));
    const auto nodes = YamlReader::parse(nodes_yaml, origin + "nodes.yaml");
    for (const auto& item : nodes.at("nodes").items()) c.nodes_.push_back(parse_node_kind(item));
    const auto nets = YamlReader::parse(networks_yaml, origin + "networks.yaml");
    for (const auto& item : nets.at("networks").items())
        c.networks_.push_back(parse_network_kind(item));
    c.nccl_ = parse_nccl(YamlReader::parse(nccl_yaml, origin + "nccl.yaml").at("nccl"));
    for (IntraNodeKind k : {IntraNodeKind::NvSwitch, IntraNodeKind::NvLinkMesh, IntraNodeKind::Pcie})
        (void)c.node_kind(k);  // every kind must be described
    for (InterNodeKind k : {InterNodeKind::InfiniBand, InterNodeKind::Roce, InterNodeKind::Ethernet})
        (void)c.network_kind(k);
    return c;
}

namespace {

// The GPU a mistyped name most likely meant, among names and aliases ("H100" -> the alias h100).
std::string gpu_hint(const std::vector<GpuSpec>& gpus, const std::string& name) {
    std::vector<std::string> candidates;
    for (const auto& g : gpus) {
        candidates.push_back(g.name);
        candidates.insert(candidates.end(), g.aliases.begin(), g.aliases.end());
    }
    const auto near = closest_name(name, candidates);
    if (!near) return {};
    const auto owner = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSpec& g) {
        return std::find(g.aliases.begin(), g.aliases.end(), *near) != g.aliases.end();
    });
    if (owner == gpus.end()) return fmt::format(" (did you mean '{}'?)", *near);
    return fmt::format(" (did you mean '{}', the alias of {}?)", *near, owner->name);
}

}  // namespace

const GpuSpec& Catalog::gpu(const std::string& name) const {
    for (const auto& g : gpus_) {
        if (g.name == name) return g;
        for (const auto& a : g.aliases)
            if (a == name) return g;
    }
    throw InputError({"", 0, "cluster.gpu"}, fmt::format("unknown GPU '{}' (allowed: {}){}", name,
                                                         fmt::join(gpu_names(), ", "), gpu_hint(gpus_, name)));
}

std::vector<std::string> Catalog::gpu_names() const {
    std::vector<std::string> out;
    for (const auto& g : gpus_) out.push_back(g.name);
    return out;
}

const NodeKindSpec& Catalog::node_kind(IntraNodeKind kind) const {
    for (const auto& n : nodes_)
        if (n.kind == kind) return n;
    throw InputError({"", 0, "cluster.intra_node"},
                     fmt::format("the catalog does not describe intra-node kind '{}'", to_string(kind)));
}

const NodeKindSpec& Catalog::node_kind(const std::string& name) const {
    return node_kind(parse_intra_node_kind(name, {"", 0, "cluster.intra_node"}));
}

const NetworkKindSpec& Catalog::network_kind(InterNodeKind kind) const {
    for (const auto& n : networks_)
        if (n.kind == kind) return n;
    throw InputError({"", 0, "cluster.inter_node.kind"},
                     fmt::format("the catalog does not describe network kind '{}'", to_string(kind)));
}

const NetworkKindSpec& Catalog::network_kind(const std::string& name) const {
    return network_kind(parse_inter_node_kind(name, {"", 0, "cluster.inter_node.kind"}));
}

std::vector<std::string> Catalog::node_kind_names() const {
    std::vector<std::string> out;
    for (const auto& n : nodes_) out.push_back(n.name);
    return out;
}

std::vector<std::string> Catalog::network_kind_names() const {
    std::vector<std::string> out;
    for (const auto& n : networks_) out.push_back(n.name);
    return out;
}

const NetworkGeneration& NetworkKindSpec::generation_for(double gbit_per_s) const {
    for (const auto& g : generations)
        if (g.gbit_per_s >= gbit_per_s * (1.0 - 1e-9)) return g;
    return generations.back();
}

double NcclConstants::tree_allreduce_factor(Bytes bytes) const {
    // NCCL indexes by log2i(nBytes >> 6); ilogb is that floor of log2, exact for any double.
    const double classes = bytes.value / 64.0;
    if (!(classes >= 1.0)) return 1.0;
    const auto i = static_cast<std::size_t>(std::ilogb(classes));
    return i < tree_allreduce_correction.size() ? tree_allreduce_correction[i] : 1.0;
}

}  // namespace cuboid::hw
