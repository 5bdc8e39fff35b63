// The figures of the output contract computed from a simulated program.
#pragma once

#include "hardware_models/gpu_spec.hpp"
#include <span>

#include "sim/executor.hpp"
#include "sim/memory.hpp"
#include "strategies/layout.hpp"
#include "strategies/run.hpp"

namespace cuboid {

// The rank the breakdown describes: the one that finishes last (lowest index on ties).
std::uint32_t critical_rank(const sim::SimResult& sim);

Breakdown breakdown_seconds(const sim::RankBreakdown& b);
// The member of Breakdown that holds the exposed time of communication class `comm`
// (program_streams.hpp); throws std::logic_error for a category of no class.
double Breakdown::*exposed_part(sim::OpCategory comm);

// A rank's busy time: compute and recomputation on its compute stream, in seconds.
double busy_seconds(const sim::RankBreakdown& b);

// Per op list of the program (a pipeline stage), the largest busy time of the ranks that run it.
std::vector<double> stage_busy_seconds(const sim::Program& program, const sim::SimResult& sim);

// A rank's bubble split into stage imbalance and schedule bubble (BubbleSplit in run.hpp):
// imbalance = min(bubble, the busiest stage's busy time - the rank's own).
BubbleSplit split_bubble(double bubble_s, double busy_s, std::span<const double> stage_busy_s);

// Throughput, FLOPs, MFU and the optional time/cost/energy extras from the iteration time.
void fill_rates(RunResult& r, const Scenario& sc, const hw::GpuSpec& gpu);

// Per-stage and overall peak memory against the GPU's capacity less `headroom` (a fraction,
// RunOptions::memory_headroom), from each op list's totals (sim::op_list_totals).
void fill_memory(RunResult& r, std::span<const sim::OpListTotals> totals, const hw::GpuSpec& gpu,
                 double headroom = 0.0);

// The memory a plan may use on `gpu`: its capacity less the headroom fraction (exactly the
// capacity for 0).
Bytes usable_memory(const hw::GpuSpec& gpu, double headroom);

}  // namespace cuboid
