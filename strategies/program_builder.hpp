// Scenario + validated layout -> the Program every GPU runs in one training iteration.
//
// One OpList per pipeline stage (ranks of a stage share it, each with its own groups, see
// strategies/group_slots.hpp); layers at kernel granularity with real GEMM shapes; schedules
// gpipe / 1f1b / interleaved; recompute none / full / selective; 1d tensor parallelism with
// optional sequence parallelism; data parallelism with bucketed, overlapped gradient reduction
// and ZeRO stages 0-2.
#pragma once

#include "sim/program.hpp"
#include "strategies/layout.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

// `layout` must come from validate_plan(scenario).
sim::Program build_program(const Scenario& scenario, const Layout& layout);

// GEMM FLOPs the program executes over all GPUs (each OpList counted once per rank running it):
// the model FLOPs plus recomputed forward work.
double program_gemm_flops(const sim::Program& program);

// Bytes the ranks of each stage hold for the whole iteration besides activations:
// weights, gradients, optimizer state (ZeRO-sharded) and pipeline message buffers.
Bytes stage_resident_bytes(const Scenario& scenario, const Layout& layout, int stage);

}  // namespace cuboid
