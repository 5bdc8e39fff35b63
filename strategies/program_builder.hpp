// Scenario + validated layout -> the Program every GPU runs in one training iteration.
//
// One OpList per pipeline stage (ranks of a stage share it, each with its own groups, see
// strategies/group_slots.hpp); layers at kernel granularity with real GEMM shapes; schedules
// gpipe / 1f1b / interleaved / shifted-critical-path; recompute none / full / selective /
// stage-aware; 1d tensor parallelism with
// optional sequence parallelism; data parallelism with bucketed, overlapped gradient reduction
// and ZeRO stages 0-2.
#pragma once

#include <limits>
#include <span>
#include <vector>

#include "sim/memory.hpp"
#include "sim/program.hpp"
#include "strategies/layout.hpp"
#include "strategies/op_tag.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

struct BuildOptions {
    // GPU memory per rank. Stage-aware recomputation checkpoints, per stage, the fewest layers
    // with which the stage's peak memory fits in it; unbounded: nothing is checkpointed.
    Bytes memory_capacity{std::numeric_limits<double>::infinity()};
};

// `layout` must come from validate_plan(scenario).
sim::Program build_program(const Scenario& scenario, const Layout& layout, const BuildOptions& options = {});

// Per stage, the layers that keep only their input and are recomputed in the backward:
//  none, selective: 0; full: all (with shifted-critical-path, none on the last stage, Merak's
//  rule); stage-aware (Merak, seed_algorithms §1.2, "memory decides"): the smallest count whose
//  stage program peaks within options.memory_capacity (all when none fits; the last stage 0 under
//  shifted-critical-path). The peak is sim::peak_memory of the stage's own OpList, so the choice
//  accounts for the schedule's in-flight micro-batches (min(p-s, m) under 1F1B, 3 at SCP's p-2).
std::vector<int> checkpointed_layers(const Scenario& scenario, const Layout& layout, const BuildOptions& options = {});

// build_program with a given checkpointed_layers() choice. The stages are built on `threads`
// threads (0: one per core), at most one per stage; the program does not depend on how many.
// Callers that already run one build per core (a sweep) pass 1.
sim::Program build_program_checkpointing(const Scenario& scenario, const Layout& layout,
                                         const std::vector<int>& checkpointed, int threads = 0);

// A program with its tags: which layer, micro-batch and chunk each op works on (op_tag.hpp), for
// executors that run the program's math.
struct TaggedProgram {
    sim::Program program;
    ProgramTags tags;  // tags[op_list][op]
};

// build_program with the tag side table.
TaggedProgram build_tagged_program(const Scenario& scenario, const Layout& layout, const BuildOptions& options = {});

// GEMM FLOPs the program executes over all GPUs (each OpList counted once per rank running it):
// the model FLOPs plus recomputed forward work.
double program_gemm_flops(const sim::Program& program);
// The same from the lists' totals (sim::op_list_totals, one per op list), when the caller has them.
double program_gemm_flops(const sim::Program& program, std::span<const sim::OpListTotals> totals);

// Bytes the ranks of each stage hold for the whole iteration besides activations:
// weights, gradients, optimizer state (ZeRO-sharded) and pipeline message buffers.
Bytes stage_resident_bytes(const Scenario& scenario, const Layout& layout, int stage);

// stage_resident_bytes in its parts (they sum to it up to rounding).
struct ResidentMemory {
    // The working copy the GEMMs read (ZeRO-3: the rank's shard and two gathered units).
    double weights_bytes = 0.0;
    // The gradient buffer reduced across data parallelism (ZeRO-3: the shard and one unit's
    // unsharded gradient before its reduce-scatter).
    double gradients_bytes = 0.0;
    double optimizer_state_bytes = 0.0;   // fp32 main weights and Adam moments (training_state.hpp)
    double pipeline_buffers_bytes = 0.0;  // one incoming activation and one incoming gradient message
};
ResidentMemory stage_resident_memory(const Scenario& scenario, const Layout& layout, int stage);

}  // namespace cuboid
