#include "strategies/work_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"
#include "strategies/context_attention.hpp"

namespace cuboid {
namespace {

// Upper bounds rather than averages, so that no plan that can run is refused: a layer's forward
// and backward are at most some 64 ops per micro-batch (more with recomputation and sub-pipelined
// tensor parallelism, counted below), an op with its dependencies, index slot and totals well under
// 256 bytes, a simulated rank under 8 KiB, an op at most two events (lockstep runs and compute
// chains take many ops per event). Against the shipped scenarios (Release, 2026-11) the estimate is
// 46 times (gpt-1008b, 3,072 GPUs: 6.1e8 against 13.2 million events) to 800 times the events
// taken, and 1.1 to 3.5 times the peak resident memory (1.53 GiB against 0.43 GB).
constexpr double kOpsPerLayer = 64.0;
constexpr double kOpsPerRankFixed = 256.0;  // embedding, head, optimizer, gradient synchronisation
constexpr double kBytesPerOp = 256.0;
constexpr double kBytesPerRank = 8192.0;
constexpr double kEventsPerOp = 2.0;
constexpr double kBytesPerPartitionEdge = 48.0;  // edge, weight and cost of the partitioner's cut graph

std::string si(double v) { return v < 1e6 ? fmt::format("{:.0f}", v) : fmt::format("{:.2g}", v); }
std::string gib(double bytes) { return fmt::format("{:.3g} GiB", bytes / double(1ULL << 30)); }

}  // namespace

WorkEstimate estimate_work(const Scenario& sc, int data, int micro_batches) {
    const ParallelPlan& p = sc.parallel;
    // Doubles throughout: the factors are below 2^31 each and their products only compared.
    const double gpus = double(p.tensor) * p.pipeline * data;
    const double layers_per_rank = double(sc.model.layers) / p.pipeline;
    const double recompute = p.recompute == Recompute::None ? 1.0 : 1.5;
    // A context mode's attention may add ops per context rank (the ring's c steps, each a kernel,
    // an exchange and a merge, each way).
    const double context_ops = p.context > 1 ? context_mode_kind(p.context_mode).ops_per_context_rank * p.context : 0.0;
    const double ops_per_layer = (kOpsPerLayer + context_ops) * recompute * std::max(1, p.overlap_chunks);
    WorkEstimate w;
    w.ops_per_rank = double(micro_batches) * layers_per_rank * ops_per_layer + kOpsPerRankFixed;
    w.events = gpus * w.ops_per_rank * kEventsPerOp;
    // One op list per pipeline stage, shared by its ranks.
    w.memory_bytes = double(p.pipeline) * w.ops_per_rank * kBytesPerOp + gpus * kBytesPerRank;
    const double chunks = double(p.pipeline) * p.virtual_stages;
    if (p.stage_layers.empty() && p.partition == PartitionMethod::Auto && chunks > 1) {
        const double l = double(sc.model.layers) + 1.0;
        w.memory_bytes += chunks * l * l / 2.0 * kBytesPerPartitionEdge;
    }
    return w;
}

double memory_limit_bytes(const WorkLimits& limits) {
    if (limits.max_memory_bytes > 0.0) return limits.max_memory_bytes;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? double(pages) * double(page) : 64.0 * double(1ULL << 30);
}

void check_work(const Scenario& sc, int data, int micro_batches) {
    const WorkEstimate w = estimate_work(sc, data, micro_batches);
    const double memory_limit = memory_limit_bytes(sc.limits);
    const bool too_many = w.events > sc.limits.max_events;
    const bool too_large = w.memory_bytes > memory_limit;
    if (!too_many && !too_large) return;
    // Blame the largest of the plan's size factors: the key to change first.
    const ParallelPlan& p = sc.parallel;
    const double gpus = double(p.tensor) * p.pipeline * data;
    const std::array<std::pair<const char*, double>, 3> factors{{{"model.layers", double(sc.model.layers) / p.pipeline},
                                                                 {"training.global_batch", double(micro_batches)},
                                                                 {"cluster.nodes", gpus}}};
    const auto blamed = std::max_element(factors.begin(), factors.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
    const std::string shape = fmt::format("{} GPUs x {} micro-batches x {} layers per stage", si(gpus),
                                          si(micro_batches), si(double(sc.model.layers) / p.pipeline));
    const std::string what =
        too_many ? fmt::format("the plan would take about {} simulator events ({}), more than --max-events {}",
                               si(w.events), shape, si(sc.limits.max_events))
                 : fmt::format("the plan would need about {} of memory to simulate ({}), more than --max-memory {}",
                               gib(w.memory_bytes), shape, gib(memory_limit));
    throw InputError(sc.where(blamed->first),
                     what + fmt::format("; make {} smaller or raise the limit", blamed->first));
}

}  // namespace cuboid
