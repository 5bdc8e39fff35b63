// One rank of the GPU executor: replays its op list on its device, iteration after iteration.
#pragma once

#include "sim/program.hpp"
#include "validate/cuda/comms.hpp"
#include "validate/cuda/gpu_executor.hpp"
#include "validate/plan/execution_plan.hpp"
#include "validate/report/rank_figures.hpp"

namespace cuboid::validate::gpu {

// Warm-up, timed iterations (an event pair around the whole iteration), then profiled iterations
// (an event pair around every op). Every iteration starts with a one-element all-reduce over all
// ranks, so that the ranks start together as a training step does after the previous one.
RankMeasurement run_rank(const sim::Program& program, const ExecutionPlan& plan, std::uint32_t rank, int device,
                         const Bootstrap& boot, const ExecutorOptions& options);

}  // namespace cuboid::validate::gpu
