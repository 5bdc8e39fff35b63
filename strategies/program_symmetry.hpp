// The rank permutations under which a plan's program is expected to be symmetric, proposed to
// sim's symmetry folding (sim/symmetry.hpp). sim checks each against the program and the network
// and drops those that fail: a wrong proposal costs verification time, never a wrong result.
//
// Candidates, as moves along the plan's axes (Layout::grid):
// - Every data-parallel replica runs the same program on its own groups, so shifting the data
//   coordinate maps the program onto itself. Whether it maps the network onto itself depends on
//   where the replicas sit: a shift by one replica maps a ring hop inside a node (or leaf) onto one
//   that leaves it when several replicas share a node (or leaf), while a shift by the replicas of a
//   whole node (or leaf) does not. So a shift by every divisor b < D of D is a candidate.
// - In the 1d tensor mode every member of a tensor group runs the same op list too, and any
//   permutation of the tensor coordinate maps the program onto itself: the shift by every divisor
//   b < T, and the cyclic shift inside blocks of b consecutive tensor indices for every divisor
//   1 < b < T. The blocks matter on clusters whose leaves do not hold whole nodes (HDR leaves of 20
//   NICs put GPUs 0-3 and 4-7 of some nodes on different leaves: only permutations inside each half
//   map the network onto itself). The 2d, 3d and atp meshes give their members different roles
//   along the axes, and are folded over the data coordinate only.
// A candidate is proposed only if it maps every communicator family of the layout
// (strategies/group_families.hpp) onto itself: a shift that splits a context, shard or expert
// group cannot map the program onto itself, and checking that here is cheaper than in sim.
#pragma once

#include <vector>

#include "sim/symmetry.hpp"
#include "strategies/layout.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

std::vector<sim::RankMap> symmetry_generators(const Layout& layout, TensorMode mode);

}  // namespace cuboid
