// The device mesh of a tensor group under each tensor-parallel mode, and which mesh axis carries
// which role in the layer programs (strategies/tensor_modes/mode_layer.hpp).
//
// Axis 0 is the fastest-varying (consecutive GPUs, hence inside a node first), as in
// Layout::tensor_mesh and the axis groups of strategies/program_groups.cpp:
//   1d  {t, 1, 1}
//   2d  {q, q, 1}   q = sqrt(t) (Optimus / SUMMA): axis 0 = the row group (devices sharing the
//                   row index i, differing in the column j), axis 1 = the column group
//   3d  {q, q, q}   q = cbrt(t) (Bian et al. 2021): for QKV and FC1 axis 0 is the input group,
//                   axis 1 the weight group, axis 2 the output group; the projection and FC2 swap
//                   input and output (seed_algorithms §2.1)
//   atp {d1, d2, 1} (Cheng et al. 2023, seed_algorithms §3.1-3.2). The order says which axis
//                   splits the first linear's columns (the heads, the MLP inner dimension):
//                   column-first axis 0, row-first axis 1; the other axis splits the hidden
//                   size. Same convention as choose_atp (atp_choice.hpp).
#pragma once

#include <array>

#include "strategies/layout.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

struct TensorMesh {
    TensorMode mode = TensorMode::OneD;
    std::array<int, 3> axes{1, 1, 1};  // product = tensor
    AtpOrder order = AtpOrder::ColumnFirst;  // atp only

    static TensorMesh one_d(int t) { return {TensorMode::OneD, {t, 1, 1}, AtpOrder::ColumnFirst}; }
    static TensorMesh two_d(int q) { return {TensorMode::TwoD, {q, q, 1}, AtpOrder::ColumnFirst}; }
    static TensorMesh three_d(int q) { return {TensorMode::ThreeD, {q, q, q}, AtpOrder::ColumnFirst}; }
    static TensorMesh atp(int d1, int d2, AtpOrder order) { return {TensorMode::Atp, {d1, d2, 1}, order}; }

    int size(int axis) const { return axes[static_cast<std::size_t>(axis)]; }
    int q() const { return axes[0]; }  // 2d / 3d edge length
    // ATP: the axis splitting the first linear's columns (its groups all-reduce the second
    // linear's partial outputs) and the axis splitting the hidden size (its groups all-reduce the
    // first linear's partial outputs and the LayerNorm statistics).
    int column_axis() const { return order == AtpOrder::RowFirst ? 1 : 0; }
    int hidden_axis() const { return 1 - column_axis(); }
    // 2d, 3d and atp run their own layer programs; 1d, and atp whose hidden axis has length 1
    // (exactly Megatron's column/row split, seed_algorithms §3.1), run Megatron's.
    bool own_program() const {
        return mode != TensorMode::OneD && !(mode == TensorMode::Atp && size(hidden_axis()) == 1);
    }
};

// n^(1/power) when it is an integer, else 0.
int integer_root(int n, int power);

// The mesh the scenario's plan gives: q from tensor for 2d and 3d (0 edge when t is not a square
// or cube: validate_plan rejects it), the ATP mesh and order from the plan or chosen by
// choose_atp (strategies/tensor_modes/atp_choice.hpp). `builtin`: the parsed built-in catalog
// when the caller holds it; without it, an ATP plan without its mesh and order parses the catalog.
TensorMesh tensor_mesh_of(const Scenario& sc, const hw::Catalog* builtin = nullptr);

// The same mesh read from a layout validate_plan(sc) returned, which stores it: no choice is made
// again (choose_atp prices every candidate), so builders may call it per stage and per probe.
TensorMesh tensor_mesh_of(const Scenario& sc, const Layout& layout);

}  // namespace cuboid
