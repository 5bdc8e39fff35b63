// A rail-optimized fabric against a non-blocking fat-tree of the same NICs: data-parallel
// all-reduces must be no slower on rails, from 4 to 256 nodes.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <deque>
#include <map>
#include <set>

#include "hardware_models/collectives.hpp"
#include "hardware_models/topology.hpp"
#include "hw_test_util.hpp"

using namespace cuboid;
using namespace cuboid::hw;
using namespace cuboid::hw::test;

namespace {

ClusterSpec h100_ndr(int nodes, NetworkTopology topology) {
    ClusterSpec s;
    s.gpu = "h100-sxm-80gb";
    s.nodes = nodes;
    s.nic_gbps = 400.0;  // NDR, 8 per node (DGX H100)
    s.topology = topology;
    return s;
}

// The data-parallel groups of a plan with tensor degree `tensor` and no pipeline: tensor rank r of
// every tensor group of every node. With tensor 4 a group holds two GPUs of each node, on two
// rails, so its ring crosses rails between nodes.
std::vector<std::vector<std::uint32_t>> data_parallel_groups(int nodes, int tensor) {
    std::vector<std::vector<std::uint32_t>> groups(static_cast<std::size_t>(tensor));
    for (int gpu = 0; gpu < nodes * 8; ++gpu) groups[static_cast<std::size_t>(gpu % tensor)].push_back(gpu);
    return groups;
}

// Plans every collective as a ring: NCCL keeps each ring channel on its rail (it enters and leaves
// a node through the same NIC), whatever algorithm it would pick.
class RingPlanner : public sim::TransferPlanner {
public:
    RingPlanner(const Hardware& hw, const sim::Program& program) : hw_(hw), program_(program) {}
    const sim::TransferPlan& plan(const sim::TransferRequest& r) override {
        const auto& ranks = program_.groups[r.group].ranks;
        return plans_.emplace_back(
            hw_.collectives().build(CollectiveAlgorithm::Ring, r.kind, r.bytes, ranks, r.source).plan);
    }

private:
    const Hardware& hw_;
    const sim::Program& program_;
    std::deque<sim::TransferPlan> plans_;
};

enum class Algorithm { Chosen, Ring };

Time all_reduce_time(int nodes, int tensor, NetworkTopology topology, Algorithm algorithm) {
    const auto hw = Hardware::build(h100_ndr(nodes, topology), Catalog::load_builtin());
    // 256 MiB: a gradient bucket of a few hundred million parameters in BF16, bandwidth-bound.
    const auto program = collective_program(static_cast<std::uint32_t>(nodes * 8), sim::OpKind::AllReduce,
                                            Bytes(256.0 * 1024 * 1024), data_parallel_groups(nodes, tensor));
    if (algorithm == Algorithm::Chosen) return simulate(*hw, program);
    RingPlanner rings(*hw, program);
    return sim::simulate(program, hw->price(program), hw->links(), rings).makespan;
}

// Groups with two or more GPUs per node cross rails between nodes (GPU 4 of one node to GPU 0 of
// the next): leaf, spine, leaf where a fat-tree of four nodes has one leaf. Two more switches per
// ring step add about 2 x 0.13 us x 2(P-1) steps, under 0.1 % of a 256 MiB all-reduce; the
// bandwidth term must not be worse at all.
constexpr double kSwitchLatencyShare = 1e-3;

void check_rails_no_slower(int tensor, int nodes, Algorithm algorithm) {
    const Time rail = all_reduce_time(nodes, tensor, NetworkTopology::RailOptimized, algorithm);
    const Time fat_tree = all_reduce_time(nodes, tensor, NetworkTopology::FatTree, algorithm);
    INFO(fmt::format("tensor {}, {} nodes: rail {} s, fat-tree {} s", tensor, nodes, to_seconds(rail),
                     to_seconds(fat_tree)));
    CHECK(to_seconds(rail) <= to_seconds(fat_tree) * (1.0 + kSwitchLatencyShare));
}

}  // namespace

TEST_CASE("rail-optimized fabric: data-parallel rings no slower than on a fat-tree", "[topology][rail]") {
    // Rails give each NIC of a node its own leaf; every leaf has as many up-links as NICs, so the
    // fabric is as non-blocking as the fat-tree. Routed D-mod-K by the destination's leaf port,
    // the destinations under one leaf come down distinct spines and the rings (shift permutations)
    // see no contention, on 4 to 256 nodes (2,048 GPUs, 8 groups of 32 nodes per rail).
    for (const int tensor : {8, 4, 2})
        for (const int nodes : {4, 16, 32, 64, 128, 256}) check_rails_no_slower(tensor, nodes, Algorithm::Ring);
}

TEST_CASE("rail-optimized fabric: data-parallel all-reduces no slower than on a fat-tree", "[topology][rail]") {
    // With the algorithm NCCL's cost model picks (ring, tree or hierarchical).
    // FIXME: from 128 nodes the tree is picked on the fat-tree and is slower on rails, as cuboid lays
    // the tree out as a heap (parent (i-1)/2), whose edges are not shift permutations and collide on
    // spine up-links under D-mod-K routing. NCCL's double binary tree (ncclGetBtree) links nodes
    // whose positions differ by a power of two; modelling that layout is the fix.
    for (const int tensor : {8, 4, 2})
        for (const int nodes : {4, 16, 32, 64}) check_rails_no_slower(tensor, nodes, Algorithm::Chosen);
}

TEST_CASE("rail-optimized fabric: a leaf's NICs sit on distinct down ports", "[topology][rail]") {
    // D-mod-K routing is only contention-free if the NICs of one leaf have distinct ports.
    TopologyParams p;
    p.nodes = 96;
    p.nics_per_node = 8;
    p.switch_radix = 64;  // 32 down, 32 up
    p.topology = NetworkTopology::RailOptimized;
    REQUIRE(p.leaf_down_ports() == 32);
    std::map<int, std::set<int>> ports_of_leaf;
    for (int nic = 0; nic < p.nodes * p.nics_per_node; ++nic) {
        const bool fresh = ports_of_leaf[p.leaf_of_nic(nic)].insert(p.leaf_port_of_nic(nic)).second;
        CHECK(fresh);
    }
    // 96 nodes = 3 groups of 32 nodes, each with one leaf per rail.
    CHECK(ports_of_leaf.size() == 3u * 8u);
}
