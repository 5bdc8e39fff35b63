// The hardware model of one cluster: what a compute op costs, which links the network has, and
// how collectives become flows on them. Built once per distinct cluster and shared read-only by
// every simulation of that cluster (sweeps, searches).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "hardware_models/cluster_spec.hpp"
#include "hardware_models/gpu_spec.hpp"
#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/transfer.hpp"

namespace cuboid::hw {

class Catalog;
class Topology;
class ComputeModel;
class CollectiveModel;
struct HardwareProfile;

class Hardware {
public:
    // Throws InputError (hardware_models/errors.hpp) for an unknown GPU or impossible cluster.
    static std::shared_ptr<const Hardware> build(const ClusterSpec& spec, const Catalog& catalog);
    ~Hardware();

    const ClusterSpec& spec() const;
    const GpuSpec& gpu() const;
    std::span<const sim::Link> links() const;

    // Duration of one compute op on one GPU (roofline with shape-dependent efficiency, or the
    // calibrated profile when the cluster names one).
    Time compute_duration(const sim::Op& op) const;
    sim::ProgramCosts price(const sim::Program& program) const;

    // A planner for one simulation of `program` (caches plans per group, kind and size).
    std::unique_ptr<sim::TransferPlanner> make_planner(const sim::Program& program) const;

    // Uncontended time of one collective on the given ranks, without simulation (for estimates
    // that need no contention, such as lower bounds).
    Time collective_time(sim::OpKind kind, Bytes bytes, std::span<const std::uint32_t> ranks) const;

    const Topology& topology() const;
    const ComputeModel& compute_model() const;
    const CollectiveModel& collectives() const;
    const HardwareProfile* profile() const;  // null without one

    // Only build() can make the token: a Hardware is always complete.
    class Token {
        Token() = default;
        friend class Hardware;
    };
    explicit Hardware(Token);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace cuboid::hw
