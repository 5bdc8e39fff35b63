// The pipeline schedules as one descriptor table: a row per schedule holds everything cuboid knows
// of it, its scenario word, its one line with the source, its plan rules, its stage orders and its
// activation memory in flight. The parser and `cuboid list schedules` (through names.hpp), the
// search space, the plan checks, the program builder and the partitioner read this table, so a
// new schedule is a row here and its order function.
#pragma once

#include <span>
#include <vector>

#include "strategies/plan_checker.hpp"
#include "strategies/schedule.hpp"

namespace cuboid {

struct ScheduleKind {
    Schedule value;
    const char* name;         // the scenario word
    const char* description;  // one line, with the source paper or library
    // The order of stage `stage` of `p` for `m` micro-batches and `v` chunks per stage.
    std::vector<PipelineStep> (*order)(int p, int m, int v, int stage);
    // The plan rules of the schedule: its chunks per stage (parallel.virtual_stages) and what else
    // it needs, checked at the offending key; `micro_batches` per pipeline per iteration.
    void (*check)(const PlanChecker& c, const Scenario& sc, int micro_batches);
    // Model chunks per stage: 0 for the plan's parallel.virtual_stages, two or more (and then the
    // schedule needs pipeline > 1); else exactly this many. check() enforces it, the search
    // space enumerates by it.
    int chunks = 1;
    // Micro-batches a stage holds at its peak, for the partitioner's memory estimate (the
    // program's own peak, which the memory check uses, has the exact bytes).
    double (*in_flight)(int p, int m, int v, int stage);
    // Each backward runs as two passes, B (input gradients, sent upstream) and a later W (weight
    // gradients), instead of one.
    bool splits_backward = false;
    // Stage s holds model chunks s and 2p-1-s: the model runs down the stages and back up.
    bool v_shape = false;
    // Merak's pre-checkpointing: checkpointed micro-batches run Fc and a recompute R in the
    // bubbles, the last stage never recomputes, and stage p-2 defers two sends (seed_algorithms
    // §1.1).
    bool pre_recompute = false;
};

std::span<const ScheduleKind> schedule_kinds();
const ScheduleKind& schedule_kind(Schedule s);  // std::logic_error for a value with no row

}  // namespace cuboid
