#include "strategies/tensor_modes/mode_validation.hpp"

#include <string>

#include "hardware_models/errors.hpp"
#include "hardware_models/table_row.hpp"
#include "strategies/plan_checker.hpp"
#include "strategies/tensor_modes/atp_choice.hpp"
#include "strategies/tensor_modes/tensor_mode_kinds.hpp"

namespace cuboid {
namespace {

using std::to_string;

using Checker = PlanChecker;

// Heads and the MLP columns split `heads_div` ways (every device computes whole heads), the
// hidden size `hidden_div` ways.
void check_splits(const Checker& c, const Scenario& sc, int heads_div, int hidden_div, const std::string& why) {
    const ModelSpec& m = sc.model;
    const std::string k = "parallel.tensor";
    c.require(m.heads % heads_div == 0, k, why + " splits the " + to_string(m.heads) + " attention heads " +
                                               to_string(heads_div) + " ways");
    c.require(m.kv_heads_or_default() % heads_div == 0, k,
              why + " splits the " + to_string(m.kv_heads_or_default()) + " key/value heads " + to_string(heads_div) + " ways");
    c.require(m.ffn_or_default() % heads_div == 0, k,
              why + " splits the MLP size " + to_string(m.ffn_or_default()) + " " + to_string(heads_div) + " ways");
    c.require(m.hidden % hidden_div == 0, k,
              why + " splits the hidden size " + to_string(m.hidden) + " " + to_string(hidden_div) + " ways");
}

void check_cube_or_square(const Checker& c, const Scenario& sc, int power) {
    const int t = sc.parallel.tensor;
    const int q = integer_root(t, power);
    const std::string mode = power == 2 ? "2d" : "3d";
    const std::string shape = power == 2 ? "q x q mesh (Optimus / SUMMA): tensor must be q^2 (1, 4, 9, 16, ...)"
                                         : "q x q x q cube (Bian et al. 2021): tensor must be q^3 (1, 8, 27, 64, ...)";
    c.require(q > 0, "parallel.tensor", mode + " tensor parallelism runs on a " + shape + "; got " + to_string(t));
    check_splits(c, sc, q, q, mode);
    // The activation [b, s, h] is split over the sequences (q ways in 2d, q^2 in 3d) so that the
    // attention of a device's sequences needs no communication (ColossalAI's 2D and 3D layers).
    const int seq_div = power == 2 ? q : q * q;
    c.require(sc.training.micro_batch % seq_div == 0, "training.micro_batch",
              mode + " splits each micro-batch's sequences " + to_string(seq_div) + " ways over the mesh (q = " +
                  to_string(q) + "): micro_batch must be a multiple of " + to_string(seq_div));
    c.require(sc.parallel.overlap_chunks == 1, "parallel.overlap_chunks",
              "chunked overlap is modelled for 1d (sub-pipelined) and atp (chunk-based overlap); " + mode +
                  " overlaps its own steps instead: use 1");
}

void check_atp(const Checker& c, const Scenario& sc, const TensorMesh& mesh) {
    const int t = sc.parallel.tensor;
    c.require(mesh.size(0) * mesh.size(1) == t, "parallel.atp_mesh",
              "the ATP mesh " + to_string(mesh.size(0)) + " x " + to_string(mesh.size(1)) +
                  " must have d1 * d2 = tensor " + to_string(t) + " devices");
    check_splits(c, sc, mesh.size(mesh.column_axis()), mesh.size(mesh.hidden_axis()), "the atp mesh");
}

void check_square(const Checker& c, const Scenario& sc) { check_cube_or_square(c, sc, 2); }
void check_cube(const Checker& c, const Scenario& sc) { check_cube_or_square(c, sc, 3); }
void check_atp_mesh_given(const Checker& c, const Scenario& sc) {
    const ParallelPlan& p = sc.parallel;
    c.require(p.atp_mesh[0] >= 0 && p.atp_mesh[1] >= 0, "parallel.atp_mesh", "d1 and d2 must be positive");
}

TensorMesh one_d_mesh(const Scenario& sc, const hw::Catalog*) { return TensorMesh::one_d(sc.parallel.tensor); }
TensorMesh square_mesh(const Scenario& sc, const hw::Catalog*) {
    return TensorMesh::two_d(integer_root(sc.parallel.tensor, 2));
}
TensorMesh cube_mesh(const Scenario& sc, const hw::Catalog*) {
    return TensorMesh::three_d(integer_root(sc.parallel.tensor, 3));
}
TensorMesh atp_mesh(const Scenario& sc, const hw::Catalog* builtin) {
    const int t = sc.parallel.tensor;
    const AtpChoice c = builtin ? choose_atp(sc, t, *builtin) : choose_atp(sc, t);
    return TensorMesh::atp(c.d1, c.d2, c.order == AtpOrder::Auto ? AtpOrder::ColumnFirst : c.order);
}

constexpr TensorModeKind kTensorModes[] = {
    {TensorMode::OneD, "1d", "Megatron tensor parallelism (Shoeybi et al. 2019)", one_d_mesh, nullptr, nullptr},
    {TensorMode::TwoD, "2d", "Optimus / SUMMA on a q x q mesh, tensor = q^2 (Xu et al. 2021)", square_mesh,
     check_square, nullptr},
    {TensorMode::ThreeD, "3d", "3D tensor parallelism on a q x q x q cube, tensor = q^3 (Bian et al. 2021)",
     cube_mesh, check_cube, nullptr},
    {TensorMode::Atp, "atp",
     "adaptive tensor parallelism on a d1 x d2 mesh, see parallel.atp_mesh and atp_order (Cheng et al. 2023)",
     atp_mesh, check_atp_mesh_given, check_atp},
};

}  // namespace

std::span<const TensorModeKind> tensor_mode_kinds() { return kTensorModes; }

const TensorModeKind& tensor_mode_kind(TensorMode m) { return table_row(tensor_mode_kinds(), m, "tensor_mode_kind"); }

TensorMesh check_tensor_mode(const Scenario& sc, const hw::Catalog* builtin) {
    const Checker c(sc);
    const ParallelPlan& p = sc.parallel;
    // parallel.atp_mesh and atp_order are ignored by the other modes, so that a sweep over
    // tensor_mode can keep them.
    c.require(!p.sequence_parallel || p.tensor_mode == TensorMode::OneD, "parallel.sequence_parallel",
              "sequence parallelism splits the LayerNorm and dropout regions of Megatron's 1d layers; 2d and 3d "
              "already split every activation over the tensor group, and atp splits it over its mesh: use false");
    const TensorModeKind& kind = tensor_mode_kind(p.tensor_mode);
    if (kind.check) kind.check(c, sc);
    const TensorMesh mesh = kind.mesh(sc, builtin);
    if (kind.check_mesh) kind.check_mesh(c, sc, mesh);
    return mesh;
}

}  // namespace cuboid
