// Checks of the tensor-parallel mode against the model, the micro-batch and the plan, each
// reported at its scenario key (part of validate_plan, strategies/plan_validation.cpp).
#pragma once

#include "strategies/scenario.hpp"
#include "strategies/tensor_modes/tensor_mesh.hpp"

namespace cuboid {

// The mode's mesh when the plan is possible; throws InputError at the offending key. `builtin`:
// the parsed built-in catalog when the caller holds it (tensor_mesh_of).
TensorMesh check_tensor_mode(const Scenario& sc, const hw::Catalog* builtin = nullptr);

}  // namespace cuboid
