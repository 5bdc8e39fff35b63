// The tensor-parallel modes as one descriptor table: a row per mode with its scenario word, its
// one line with the source, its mesh for a tensor degree and its own plan rules. The parser and
// `cuboid list tensor-modes` (through names.hpp), the search space, the plan checks and the layout
// read it. The layer programs of each mode are in this folder (mode_layer, mode_linear,
// mode_shapes, partial_grads), which switch on the mesh's mode.
#pragma once

#include <span>

#include "strategies/plan_checker.hpp"
#include "strategies/tensor_modes/tensor_mesh.hpp"

namespace cuboid {

struct TensorModeKind {
    TensorMode value;
    const char* name;         // the scenario word
    const char* description;  // one line, with the source paper
    // The tensor group of sc.parallel.tensor devices as this mode's mesh (ATP chooses its mesh and
    // order from the cluster; `builtin`: the parsed built-in catalog when the caller holds it).
    TensorMesh (*mesh)(const Scenario& sc, const hw::Catalog* builtin);
    // The mode's own rules, checked at the offending key before its mesh is built (nullptr: none),
    // and those on the mesh once built (nullptr: none).
    void (*check)(const PlanChecker& c, const Scenario& sc);
    void (*check_mesh)(const PlanChecker& c, const Scenario& sc, const TensorMesh& mesh);
};

std::span<const TensorModeKind> tensor_mode_kinds();
const TensorModeKind& tensor_mode_kind(TensorMode m);  // std::logic_error for a mode with no row

}  // namespace cuboid
