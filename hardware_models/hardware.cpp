#include "hardware_models/hardware.hpp"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "hardware_models/collectives.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/profile.hpp"
#include "hardware_models/topology.hpp"

namespace cuboid::hw {

// Members refer to earlier members (the models to the GPU, the profile and the topology); the
// State lives behind a unique_ptr and never moves.
struct Hardware::State {
    ClusterSpec spec;
    GpuSpec gpu;
    std::optional<HardwareProfile> profile;
    Topology topology;
    ComputeModel compute;
    CollectiveModel collectives;

    State(const ClusterSpec& s, const Catalog& catalog, std::optional<HardwareProfile> p)
        : spec(s),
          gpu(catalog.gpu(s.gpu)),
          profile(std::move(p)),
          topology(Topology::build(TopologyParams::resolve(s, gpu, catalog))),
          compute(gpu, profile ? &*profile : nullptr,
                  s.host_memory_gb_per_s ? gigabytes_per_second(*s.host_memory_gb_per_s / s.gpus_per_node)
                                         : BytesPerSecond(0.0)),
          collectives(topology, CollectiveCosts::resolve(s, catalog), profile ? &*profile : nullptr) {}
};

static std::optional<HardwareProfile> load_profile(const ClusterSpec& spec, const Catalog& catalog) {
    if (!spec.profile) return std::nullopt;
    HardwareProfile p = HardwareProfile::load(*spec.profile);
    const auto it = p.metadata.find("gpu");
    if (it != p.metadata.end() && catalog.gpu(it->second).name != catalog.gpu(spec.gpu).name)
        throw InputError({*spec.profile, 0, "metadata.gpu"},
                         fmt::format("the profile was measured on '{}' but cluster.gpu is '{}'",
                                     it->second, spec.gpu));
    return p;
}

Hardware::Hardware(Token) {}
Hardware::~Hardware() = default;

std::shared_ptr<const Hardware> Hardware::build(const ClusterSpec& spec, const Catalog& catalog) {
    auto hw = std::make_shared<Hardware>(Token{});
    hw->state_ = std::make_unique<State>(spec, catalog, load_profile(spec, catalog));
    return hw;
}

const ClusterSpec& Hardware::spec() const { return state_->spec; }
const GpuSpec& Hardware::gpu() const { return state_->gpu; }
std::span<const sim::Link> Hardware::links() const { return state_->topology.links(); }
const Topology& Hardware::topology() const { return state_->topology; }
const ComputeModel& Hardware::compute_model() const { return state_->compute; }
const CollectiveModel& Hardware::collectives() const { return state_->collectives; }
const HardwareProfile* Hardware::profile() const { return state_->profile ? &*state_->profile : nullptr; }

Time Hardware::compute_duration(const sim::Op& op) const { return state_->compute.duration(op); }

namespace {

// The simulator keeps time in 64-bit picoseconds (about 106 days). Each duration is checked when
// it is converted (sim/time_overflow.hpp); their sums along a stage (the op list index's compute
// chains, lockstep planning) are bounded here, so that durations each within the clock cannot
// overflow together. No realistic stage comes near: an iteration is seconds to minutes.
constexpr double kMaxStageComputeSeconds = 1e6;

void check_durations(const std::vector<Time>& durations, std::size_t stage) {
    double total = 0.0;
    for (const Time t : durations) total += to_seconds(t);
    if (total <= kMaxStageComputeSeconds) return;
    throw InputError({"", 0, "cluster"},
                     fmt::format("the compute of pipeline stage {} alone would take {:.3g} s per iteration, more "
                                 "than the {:.0g} s cuboid simulates; check the GPU's and the hardware profile's "
                                 "figures (peak TFLOP/s, kernel_launch_us)",
                                 stage, total, kMaxStageComputeSeconds));
}

}  // namespace

sim::ProgramCosts Hardware::price(const sim::Program& program) const {
    sim::ProgramCosts costs;
    costs.durations.reserve(program.op_lists.size());
    // One memo per call: stages share layer shapes, and sweeps price programs on several threads
    // with this one Hardware, so the table must not outlive the call.
    DurationMemo memo(state_->compute, program.labels.size());
    for (const auto& list : program.op_lists) {
        memo.append_durations(list.ops, costs.durations.emplace_back());
        check_durations(costs.durations.back(), costs.durations.size() - 1);
    }
    return costs;
}

std::unique_ptr<sim::TransferPlanner> Hardware::make_planner(const sim::Program& program) const {
    return std::make_unique<CollectivePlanner>(state_->collectives, program);
}

Time Hardware::collective_time(sim::OpKind kind, Bytes bytes, std::span<const std::uint32_t> ranks) const {
    const std::uint32_t source = ranks.empty() ? 0u : ranks.front();
    return state_->collectives.plan(kind, bytes, ranks, source).time;
}

}  // namespace cuboid::hw
