// Communicators of a layout and each rank's slot table (strategies/group_slots.hpp).
#pragma once

#include "sim/program.hpp"
#include "strategies/labels.hpp"
#include "strategies/layout.hpp"

namespace cuboid {

// Adds the groups of every communicator family of `layout` (group_families.hpp) and of its
// pipeline to `program`, and one RankProgram per GPU (rank r runs the OpList of its stage).
// `tied_embedding` (the model ties its output matrix to the word embedding) adds, when p > 1, the
// embedding groups {first stage, last stage}. `parameter_gathers`: ZeRO-3, whose parameter
// all-gathers get groups of their own (slot::kShardGather); `expert_gathers`: the same for the
// routed experts' shards (slot::kExpertDataGather).
void build_groups(sim::Program& program, const Layout& layout, const Labels& labels, bool tied_embedding,
                  bool parameter_gathers = false, bool expert_gathers = false);

// The stage after / before `stage` in the flow of activations, -1 when none. With virtual
// stages the last stage feeds the first (chunk c+1), so the pipeline is a ring.
int next_stage(const Layout& l, int stage);
int prev_stage(const Layout& l, int stage);

}  // namespace cuboid
