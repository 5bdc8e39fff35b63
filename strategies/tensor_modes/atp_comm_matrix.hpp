// ATP's hierarchical communication matrix (Cheng et al. 2023; seed_algorithms §3.3): the
// cluster as nested levels of consecutive GPUs (GPU, PCIe switch, node, leaf/scalable unit), each
// with the bandwidth one unit of that level has to the rest of the cluster. The bandwidth between
// two GPUs is the smallest up-link below the level that first holds both; a ring collective
// whose edges leave a unit shares that unit's up-link with the other rings leaving it at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/cluster_spec.hpp"
#include "sim/units.hpp"

namespace cuboid {

struct CommLevel {
    std::string name;            // "gpu", "pcie-switch", "node", "leaf"
    int span_gpus = 1;           // GPUs of one unit (consecutive global ranks)
    BytesPerSecond uplink{0.0};  // payload rate from one unit to the rest, one direction
    Time step_latency{0};        // NCCL's per-step latency of a ring edge that leaves this level
    bool network = false;        // leaving a unit of this level goes through the NICs
};

struct CommMatrix {
    std::vector<CommLevel> levels;  // finest first; every span divides the next one
    int gpus = 1;                   // GPUs of the cluster
    Time ring_base{0};              // NCCL's fixed latency of one collective

    // The coarsest level whose units separate `a` and `b` (-1: a == b).
    int level_between(std::uint32_t a, std::uint32_t b) const;
    // Uncontended bandwidth from `a` to `b`: the smallest up-link of the levels the path leaves.
    BytesPerSecond bandwidth(std::uint32_t a, std::uint32_t b) const;
    // The matrix in words, one level a line: "node (8 GPUs): 200 GB/s".
    std::string describe() const;
};

// The matrix of `cluster`, rates from the GPU and the fabric entries of `catalog` with their
// protocol efficiencies (NCCL's payload fraction of line rate).
CommMatrix build_comm_matrix(const hw::ClusterSpec& cluster, const hw::Catalog& catalog);

// Ring bandwidth of the slowest of `groups` run at the same time: every ring edge takes an equal
// share of each up-link it leaves. Each group lists its members in ring order.
// Its latency is NCCL's ring all-reduce model (hardware.md §6.3), as the collective planner uses:
// base + 2(g - n) intra-node steps + 2(n - 1) network steps, n the nodes a group spans.
struct RingShare {
    BytesPerSecond bandwidth{0.0};
    Time allreduce_latency{0};  // of the slowest group
};
RingShare concurrent_ring_share(const CommMatrix& m, std::span<const std::vector<std::uint32_t>> groups);

}  // namespace cuboid
