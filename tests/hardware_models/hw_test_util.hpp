// Helpers shared by the hardware model tests: cluster specs and one-collective programs.
#pragma once

#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "sim/executor.hpp"
#include "sim/program.hpp"

namespace cuboid::hw::test {

inline ClusterSpec a100_cluster(int nodes, int gpus_per_node = 8, int nics_per_node = 8) {
    ClusterSpec s;
    s.gpu = "a100-sxm-80gb";
    s.nodes = nodes;
    s.gpus_per_node = gpus_per_node;
    s.nics_per_node = nics_per_node;
    s.nic_gbps = 200.0;  // HDR
    return s;
}

// A program over `rank_count` ranks in which the members of each group issue one collective of
// `kind` on it (ranks in no group issue nothing).
inline sim::Program collective_program(std::uint32_t rank_count, sim::OpKind kind, Bytes bytes,
                                       const std::vector<std::vector<std::uint32_t>>& groups) {
    sim::Program p;
    p.comm_classes = {{"test", false}};
    p.labels = {"test"};
    p.op_lists.resize(2);  // 0: one collective on slot 0; 1: empty
    if (kind == sim::OpKind::Send) p.op_lists.resize(3);  // 2: the Recv half
    auto add_op = [&](std::uint32_t list, sim::OpKind k) {
        sim::Op op;
        op.kind = k;
        op.category = sim::comm_category(0);
        op.stream = sim::StreamId{1};
        op.bytes = bytes;
        sim::OpListBuilder(p.op_lists[list]).add(op);
    };
    add_op(0, kind);
    if (kind == sim::OpKind::Send) add_op(2, sim::OpKind::Recv);
    p.ranks.assign(rank_count, sim::RankProgram{1, {}});
    for (std::uint32_t g = 0; g < groups.size(); ++g) {
        p.groups.push_back({groups[g], 0});
        for (std::size_t i = 0; i < groups[g].size(); ++i) {
            const bool receiver = kind == sim::OpKind::Send && i == 1;
            p.ranks[groups[g][i]] = sim::RankProgram{receiver ? 2u : 0u, {g}};
        }
    }
    return p;
}

// Simulated makespan of `program` on `hw` (priced, planned by the hardware model).
inline Time simulate(const Hardware& hw, const sim::Program& program) {
    const auto costs = hw.price(program);
    auto planner = hw.make_planner(program);
    return sim::simulate(program, costs, hw.links(), *planner).makespan;
}

inline std::vector<std::uint32_t> iota_ranks(std::uint32_t first, std::uint32_t count) {
    std::vector<std::uint32_t> r(count);
    for (std::uint32_t i = 0; i < count; ++i) r[i] = first + i;
    return r;
}

}  // namespace cuboid::hw::test
