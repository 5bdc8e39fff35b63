// ATP (Cheng et al. 2023): the 2D mesh d1 x d2 of a tensor group and the column-first / row-first
// order, chosen from the cluster's hierarchical communication matrix (seed_algorithms §3.3).
#pragma once

#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "strategies/scenario.hpp"
#include "strategies/tensor_modes/atp_comm_matrix.hpp"

namespace cuboid {

struct AtpChoice {
    int d1 = 1;                          // mesh axis 0 (fastest: consecutive GPUs)
    int d2 = 1;                          // mesh axis 1
    AtpOrder order = AtpOrder::ColumnFirst;
    double comm_cost_s = 0.0;            // the cost model's per-layer communication time of the choice
    std::string why;                     // one line for reports: the candidates' costs
};

// The mesh and order for a tensor group of `tensor` GPUs of `scenario`'s cluster. Fields the
// plan gives (parallel.atp_mesh, parallel.atp_order) are kept; the others are chosen.
// Orders (seed_algorithms §3.1-3.2), for a block "W1 -> elementwise -> W2" (attention: QKV, core,
// projection; MLP: FC1, GeLU, FC2):
//   ColumnFirst: W1's output columns (the heads, the MLP's inner dimension) split along axis 0
//     (d1), its input rows (the hidden size) along axis 1 (d2). W1's partial outputs are
//     all-reduced over axis 1, W2's over axis 0. (t, 1) is Megatron 1D.
//   RowFirst: the same with the two axes exchanged: W1's columns along axis 1, the hidden size
//     along axis 0; W1's partial outputs all-reduced over axis 0, W2's over axis 1.
// Throws InputError when a given mesh's product is not `tensor`.
AtpChoice choose_atp(const Scenario& scenario, int tensor);
// The same with an explicit catalog (the first form uses the built-in one).
AtpChoice choose_atp(const Scenario& scenario, int tensor, const hw::Catalog& catalog);

// One candidate of the search space and its cost.
struct AtpCandidate {
    int d1 = 1;
    int d2 = 1;
    AtpOrder order = AtpOrder::ColumnFirst;
    double comm_cost_s = 0.0;
};

// ATP's cost model (seed_algorithms §3.3): one transformer layer's forward and backward
// tensor-parallel all-reduces on mesh (d1, d2) with `order`, each priced as
// alpha + 2(g-1)/g * bytes / B, B the ring bandwidth of that axis' groups when all the cluster's
// tensor groups communicate at once (tensor groups are consecutive ranks, axis 0 fastest).
double atp_layer_comm_seconds(const Scenario& scenario, const CommMatrix& matrix, int d1, int d2,
                              AtpOrder order);
// Every candidate allowed by the plan's given fields, in search order, each with its cost.
std::vector<AtpCandidate> atp_candidates(const Scenario& scenario, int tensor, const CommMatrix& matrix);

// "column-first" | "row-first" | "auto".
const char* atp_order_name(AtpOrder order);

}  // namespace cuboid
