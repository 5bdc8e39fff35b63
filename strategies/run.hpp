// One scenario end to end: check the plan, build the program, price it, simulate it, and report
// the figures of the output contract (docs/scenario.md).
#pragma once

#include <array>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/hardware.hpp"
#include "sim/executor.hpp"
#include "strategies/goodput.hpp"
#include "strategies/training_cost.hpp"
#include "strategies/memory_breakdown.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

// Where the critical GPU's iteration went (docs/simulator.md, "Iteration breakdown"): its parts
// add up to the iteration time. Exposed communication is the compute stream's idle time while
// that axis' communication moves data, one part per communication class (program_streams.hpp).
struct Breakdown {
    double compute_s = 0.0;
    double recompute_s = 0.0;
    double tp_comm_exposed_s = 0.0;
    double cp_comm_exposed_s = 0.0;  // context parallelism's key/value exchanges
    double ep_comm_exposed_s = 0.0;  // expert parallelism's dispatch and combine
    double pp_comm_exposed_s = 0.0;
    double offload_exposed_s = 0.0;  // waits for activation offloading's copies to host memory and back
    double dp_comm_exposed_s = 0.0;
    double bubble_s = 0.0;

    double exposed_comm_s() const {
        return tp_comm_exposed_s + cp_comm_exposed_s + ep_comm_exposed_s + pp_comm_exposed_s + offload_exposed_s +
               dp_comm_exposed_s;
    }
};

// The parts of a Breakdown in report order, one table for every writer and reader: the key in
// results ("tp_comm_exposed", under breakdown_s), the label of text reports and charts, and the
// member. Results always carry every part; text reports and tables leave out a part that is not
// `always_shown` when it is zero (the axes most plans lack: context, expert). A part of exposed
// communication names its axis ("tensor"; validate's comparison rows say "exposed tensor comm").
struct BreakdownPart {
    const char* key;
    const char* label;
    double Breakdown::*seconds;
    bool always_shown = true;
    const char* comm_axis = nullptr;
};
std::span<const BreakdownPart> breakdown_parts();

// The bubble of the breakdown in two parts that sum to it. A GPU whose stage has less work than
// the busiest stage waits, in steady state, for that stage every micro-batch: over the iteration
// it idles by the difference of their busy times (compute and recomputation), whatever the
// schedule. That difference, at most the bubble, is `stage_imbalance_s`; `schedule_s` is the
// rest, the fill and drain the schedule has even with equal stages.
struct BubbleSplit {
    double schedule_s = 0.0;
    double stage_imbalance_s = 0.0;
};

struct RunResult {
    std::string scenario;
    int gpus = 0;
    double iteration_time_s = 0.0;
    double tokens_per_s = 0.0;
    double model_flops_per_iteration = 0.0;
    double hardware_flops_per_iteration = 0.0;
    double model_tflops_per_gpu = 0.0;
    double hardware_tflops_per_gpu = 0.0;
    double mfu = 0.0;       // over the GPU's dense peak at the scenario's precision
    // Over the GPU's dense BF16 peak whatever the precision: one yardstick across precisions (an
    // FP8 plan's mfu is against a peak twice BF16's, so it reads lower than the same speed in BF16).
    double mfu_bf16 = 0.0;
    double peak_memory_bytes = 0.0;
    double memory_capacity_bytes = 0.0;
    // The fraction of the capacity a plan must leave free to fit (RunOptions::memory_headroom).
    double memory_headroom = 0.0;
    bool fits_in_memory = true;  // peak <= (1 - memory_headroom) * capacity
    Breakdown breakdown;
    BubbleSplit bubble_split;             // breakdown.bubble_s in its parts
    // Per pipeline stage, the busy time (compute + recompute) of its busiest GPU in the iteration.
    std::vector<double> stage_busy_s;
    std::uint32_t critical_rank = 0;      // the rank the breakdown describes
    // Its coordinate on each of the plan's axes, in their order (Layout::grid: tensor, context,
    // data, pipeline).
    struct AxisCoord {
        std::string_view axis;  // one of rank_grid.hpp's axis names (static storage)
        int coord = 0;
    };
    std::vector<AxisCoord> critical_rank_coords;
    std::uint64_t sim_events = 0;
    double sim_wall_s = 0.0;
    std::uint64_t fingerprint = 0;
    double sim_fold_factor = 1.0;  // ranks per simulated rank (1: every rank simulated, RunOptions::fold)
    std::vector<double> stage_peak_memory_bytes;   // per pipeline stage
    std::vector<StageMemory> stage_memory;         // per pipeline stage, the peak in its parts
    // Per pipeline stage, the fraction of its layers checkpointed (recomputed in the backward):
    // 0 or 1 for none / selective / full, the memory-driven choice for stage-aware.
    std::vector<double> stage_recompute_fraction;
    // Layers per model chunk as the plan placed them (partitioner or override; chunk j of stage s
    // is j = local_chunk * pipeline + s), and the tensor group's mesh {a0, a1, a2}.
    std::vector<int> chunk_layers;
    std::array<int, 3> tensor_mesh{1, 1, 1};
    // optional extras (time to train, cost, energy) when the scenario gives tokens / cost
    std::optional<double> time_to_train_s;
    std::optional<double> cost_usd;
    std::optional<double> energy_kwh;
    std::optional<Goodput> goodput;  // with time to train: failures, checkpoints, restarts
    // With time to train: the cost rented and owned, with their inputs and sources.
    std::optional<TrainingCost> training_cost;
    // The same costs over the time to train with failures (goodput's effective time), when it is
    // finite: what the machines are held for, restarts and checkpoints included.
    std::optional<TrainingCost> training_cost_with_failures;
};

struct RunOptions {
    std::span<sim::SimObserver* const> observers{};  // observers of the simulation
    std::shared_ptr<const hw::Hardware> hardware;  // reuse across runs of one cluster; built if null
    std::ostream* trace = nullptr;                  // non-null: write the Perfetto timeline here
    // Simulate one rank per orbit of provably identical ranks (sim::SimOptions::fold): the same
    // results, fewer events. Ignored with observers or a trace, which want every rank.
    bool fold = false;
    // The built-in catalog (hw::Catalog::load_builtin()) when the caller holds it loaded, as a
    // sweep does: the plan's partitioner reads the GPU's datasheet figures there instead of
    // parsing the catalog for every run. Null: parsed here when needed.
    const hw::Catalog* builtin_catalog = nullptr;
    // Threads that build the program's stages (0: one per core). A sweep that already runs one
    // point per core passes 1: more would only contend for the same cores.
    int build_threads = 0;
    // The fraction of each GPU's memory a plan must leave free, in [0, 1): the plan fits when its
    // peak is at most (1 - headroom) x capacity, and stage-aware recomputation aims at that
    // budget. 0: the whole capacity (the exact comparison of a run without it).
    double memory_headroom = 0.0;
    // Once requested, run_scenario throws sim::Cancelled soon after (between its phases, and
    // every few thousand events of the simulation): a sweep stopped by a signal.
    sim::Cancellation cancel{};
    // Set: told how far the simulation has got (sim::SimOptions::progress); `cuboid run` shows it
    // on a terminal.
    sim::ProgressCallback progress{};
};

// Throws InputError when the plan is invalid for the model or cluster (with the reason).
RunResult run_scenario(const Scenario& scenario, const RunOptions& options = {});

}  // namespace cuboid
