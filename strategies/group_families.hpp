// The communicator families of a layout: each is "the ranks that differ only along these axes" of
// one of the layout's rank grids (Layout::grid and its resplit views), and fills one group slot of
// every rank (strategies/group_slots.hpp). build_groups makes the groups from this table, and
// symmetry_generators keeps only the rank permutations that map every family onto itself, so a
// new axis is a new row here, not new code in either.
//
// The pipeline's neighbour pairs and the tied embedding's {first, last stage} pairs are not
// families: their members follow the schedule's flow of activations (program_groups.cpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "strategies/labels.hpp"
#include "strategies/layout.hpp"
#include "strategies/rank_grid.hpp"

namespace cuboid {

struct GroupFamily {
    std::uint16_t slot = 0;                  // slot::k*: the slot the family's groups fill
    RankGrid grid;                           // the view of the ranks whose axes the family varies along
    std::vector<std::string_view> varying;   // the axes along which a group's members differ
    std::uint32_t Labels::*label = nullptr;  // the label of the family's groups
};

// The families `layout` has, in the order their groups are added to a program. A slot whose family
// the layout lacks aliases the rank's tensor group (its ops never run), except slot::kShard and
// slot::kExpertShard, which are the data and expert-data groups when the training state is not
// hybrid-sharded. `parameter_gathers`:
// ZeRO-3's parameter all-gathers, which get a copy of the shard groups of their own;
// `expert_gathers`: ZeRO-3's gathers of the routed experts' shards (experts_fully_sharded), a copy
// of the expert-data groups of their own.
std::vector<GroupFamily> group_families(const Layout& layout, bool parameter_gathers, bool expert_gathers = false);

}  // namespace cuboid
