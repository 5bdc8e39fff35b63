// Links of the network and the transfer plans that communication ops become.
//
// sim does not know collectives: a planner (hardware_models) turns each communication instance
// into phases of flows over links, and sim shares link bandwidth among concurrent flows max-min
// fairly. A ring collective is one flow over every link of its ring, because a pipelined ring
// moves at the pace of its slowest link; a link crossed twice is one use of weight 2.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/units.hpp"

namespace cuboid::sim {

using LinkId = std::uint32_t;

struct Link {
    std::string name;            // "node3.gpu5->nvswitch", for reports and debugging
    BytesPerSecond bandwidth{};  // one direction
};

struct LinkUse {
    LinkId link = 0;
    double weight = 1.0;  // bytes carried on this link per byte of the flow
};

struct Flow {
    std::vector<LinkUse> links;  // empty: a local copy, done after the phase latency
    Bytes bytes{0.0};
};

// A phase waits `latency`, then runs its flows concurrently; it ends when all flows are done.
// Phases run one after another.
struct TransferPhase {
    Time latency{0};
    std::vector<Flow> flows;
};

struct TransferPlan {
    std::vector<TransferPhase> phases;
};

// One communication instance, as the executor hands it to a planner.
struct TransferRequest {
    std::uint32_t group = 0;  // index into Program::groups
    OpKind kind = OpKind::AllReduce;
    Bytes bytes{0.0};         // buffer size per rank, as NCCL's count x element size
    std::uint32_t source = 0; // Send/Recv: the sending rank (Broadcast: the root); else unused
};

// Prices communication as flows. Implementations cache plans; the reference stays valid for the
// planner's lifetime. One planner serves one simulation (not shared between threads).
class TransferPlanner {
public:
    virtual ~TransferPlanner() = default;
    virtual const TransferPlan& plan(const TransferRequest& request) = 0;
    // The links from GPU `from` to GPU `to`, in order, when the planner routes on a fixed
    // network. Symmetry folding maps links by matching the routes of corresponding GPU pairs;
    // nullopt (the default) means unknown, and nothing is folded.
    virtual std::optional<std::vector<LinkId>> route(std::uint32_t /*from*/, std::uint32_t /*to*/) {
        return std::nullopt;
    }
    // route(from, to) written into `out` (its contents replaced); false when unknown. Folding a
    // sweep point matches routes by the ten thousand: a planner that keeps its routes overrides
    // this to copy them without allocating a vector each time.
    virtual bool route_into(std::uint32_t from, std::uint32_t to, std::vector<LinkId>& out) {
        auto links = route(from, to);
        if (!links) return false;
        out = std::move(*links);
        return true;
    }
};

}  // namespace cuboid::sim
