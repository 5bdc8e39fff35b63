// Observers subscribe to what the executor does; the kernel does not know what they record
// (trace, breakdown, statistics). Callbacks arrive in simulated-time order, with one exception:
// with SimOptions::merge_compute_chains a chain of compute ops that runs as one event reports all
// its ops (each with its own start and end time) when the chain ends. Per stream the order always
// holds; set merge_compute_chains to false where an observer needs the global order.
#pragma once

#include <cstdint>

#include "sim/units.hpp"

namespace cuboid::sim {

class SimObserver {
public:
    virtual ~SimObserver() = default;
    // A compute op began / ended on `rank` (op index into the rank's OpList).
    virtual void compute_started(std::uint32_t /*rank*/, std::uint32_t /*op*/, Time /*t*/) {}
    virtual void compute_finished(std::uint32_t /*rank*/, std::uint32_t /*op*/, Time /*t*/) {}
    // A communication op was issued by `rank` (reached the head of its stream, dependencies met).
    virtual void comm_posted(std::uint32_t /*rank*/, std::uint32_t /*op*/, Time /*t*/) {}
    // Every member of the group has posted it: data starts to move.
    virtual void comm_started(std::uint32_t /*rank*/, std::uint32_t /*op*/, Time /*t*/) {}
    virtual void comm_finished(std::uint32_t /*rank*/, std::uint32_t /*op*/, Time /*t*/) {}
};

}  // namespace cuboid::sim
