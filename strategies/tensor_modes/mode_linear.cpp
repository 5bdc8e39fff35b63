// Linear layers Y = X W (X [M, k], W [k, n]) under the 2d, 3d and atp tensor modes.
//
// 2d, Optimus / SUMMA on a q x q mesh (seed_algorithms §2.3; ColossalAI's Matmul_AB_2D,
// Matmul_ABT_2D, Matmul_ATB_2D). Device (i, j) holds X[i, j] [M/q, k/q] and W[i, j] [k/q, n/q].
//   forward  Y[i, j] = sum_l X[i, l] W[l, j]: step l broadcasts X[i, l] along row i (axis 0) and
//            W[l, j] along column j (axis 1), then one local [M/q, k/q] x [k/q, n/q] product.
//   dX[i, l] = sum_j dY[i, j] W[l, j]^T: step l broadcasts W[l, j] along column j, computes the
//            partial [M/q, n/q] x [n/q, k/q] and reduces it along row i to (i, l).
//   dW[l, j] = sum_i X[i, l]^T dY[i, j]: step l broadcasts X[i, l] along row i, computes the
//            partial [k/q, M/q] x [M/q, n/q] and reduces it along column j to (l, j).
//   Each step's broadcasts are issued one step ahead, so they overlap the previous product (as
//   ColossalAI's asynchronous broadcasts do). The simulator has no reduce-to-root collective: a
//   step's reduce is a reduce-scatter of the same block, which moves the same (q-1)/q of it
//   through every device as a ring reduce. The chain broadcast starts at the group's first rank
//   (the planner does not rotate the root); bytes and hops are those of any root.
//   Per device and linear: 3 (q-1) (M k + k n) / q^2 elements.
//
// 3d, Bian et al. 2021 on a q x q x q cube (seed_algorithms §2.1-2.2; ColossalAI's Linear3D):
//   forward  all-gather X over the input group ([M/q^2, k/q] -> [M/q, k/q]), all-gather W over
//            the weight group ([k/q^2, n/q] -> [k/q, n/q]), local product, reduce-scatter Y over
//            the output group ([M/q, n/q] -> [M/q^2, n/q]).
//   backward all-gather dY over the output group, dX = dY W^T reduce-scattered over the input
//            group, dW = X^T dY reduce-scattered over the weight group (asynchronous, waited late).
//   Per device and linear: 2 (q-1) (M k + k n + M n) / q^3 elements.
//
// atp, Cheng et al. 2023 on a dc x dr mesh (seed_algorithms §3.1): device (i, j) holds X_j
//   [M, h/dr]; the first linear's block W1[j, i] [k/dr, n/dc] gives a partial [M, n/dc] summed
//   over the hidden axis; the second's W2[i, j] [k/dc, n/dr] a partial [M, n/dr] summed over the
//   column axis. Input gradients are partial over the other axis; weight gradients are local.
//   With the token split (mode_shapes.hpp) the hidden-axis sums of the first linear's output and
//   of the second linear's input gradient are reduce-scatters over the rows; the interior's output
//   (forward) and input gradient (backward) are then all-gathered over the hidden axis before the
//   next linear (mode_interior_gather). With chunks (§3.4) each chunk's collective is in flight
//   while the next chunk computes.
#include "strategies/tensor_modes/mode_linear.hpp"

#include "strategies/group_slots.hpp"
#include "strategies/program_streams.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t idx(LayerOp op) { return static_cast<std::size_t>(op); }
double elems(std::int64_t a, std::int64_t b) { return static_cast<double>(a) * static_cast<double>(b); }


double freed(const LayerContext& c, LayerOp op) { return c.memory.forward[idx(op)] + c.memory.recompute[idx(op)]; }

// A forward GEMM of `lin` that stores `fraction` of what the forward keeps for it.
std::uint32_t forward_gemm(OpEmitter& e, const LayerContext& c, Phase ph, const ModeLinear& lin,
                           const sim::GemmShape& g, double fraction) {
    const Labels& l = *c.labels;
    const std::uint32_t label = ph == Phase::Recompute ? l.rec[idx(lin.op)] : l.fwd[idx(lin.op)];
    sim::Op o = gemm_op(label, g, category(ph), c.dims.act_bytes);
    const PerLayerOp& alloc = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
    o.memory_alloc = Bytes(alloc[idx(lin.op)] * fraction);
    return e.compute(o);
}

std::uint32_t backward_gemm(OpEmitter& e, const LayerContext& c, std::uint32_t label, const sim::GemmShape& g,
                            double free_bytes) {
    sim::Op o = gemm_op(label, g, OpCategory::Compute, c.dims.act_bytes);
    o.memory_free = Bytes(free_bytes);
    return e.compute(o);
}

sim::GemmShape whole_gemm(const LayerContext& c, const ModeLinear& lin, int chunks) {
    return mode_linear_gemm(c.dims, lin, mode_shares(c.dims).tokens / chunks);
}

// --- 2d ---------------------------------------------------------------------------------------
constexpr int kRow = 0, kColumn = 1;  // axis 0: devices sharing the row index i; axis 1: the column

struct Pair {
    std::uint32_t a = kNoOp, b = kNoOp;
};

std::uint32_t summa_forward(OpEmitter& e, const LayerContext& c, Phase ph, const ModeLinear& lin) {
    const sim::GemmShape g = whole_gemm(c, lin, 1);
    const double a = c.dims.act_bytes;
    const int q = c.dims.mesh.q();
    const std::uint32_t input = e.last_compute();
    const auto broadcasts = [&] {
        return Pair{mesh_collective(e, c, ph, OpKind::Broadcast, kRow, a * elems(g.m, g.k), input),
                    mesh_collective(e, c, ph, OpKind::Broadcast, kColumn, a * elems(g.k, g.n), kNoOp)};
    };
    Pair next = broadcasts();
    for (int step = 0; step < q; ++step) {
        const Pair now = next;
        if (step + 1 < q) next = broadcasts();
        e.wait_for(now.a);
        e.wait_for(now.b);
        forward_gemm(e, c, ph, lin, g, step == 0 ? 1.0 : 0.0);
    }
    return kNoOp;
}

// dX (weight = false) or dW (weight = true) in q steps; returns the last step's reduction.
std::uint32_t summa_backward(OpEmitter& e, const LayerContext& c, const ModeLinear& lin, bool weight) {
    const sim::GemmShape g = whole_gemm(c, lin, 1);
    const double a = c.dims.act_bytes;
    const int q = c.dims.mesh.q();
    const Labels& l = *c.labels;
    // dX: broadcast W along the column, reduce dX along the row; dW: broadcast X along the row,
    // reduce dW along the column.
    const int bcast_axis = weight ? kRow : kColumn, reduce_axis = weight ? kColumn : kRow;
    const double bcast_bytes = weight ? a * elems(g.m, g.k) : a * elems(g.k, g.n);
    const double partial_bytes = weight ? a * elems(g.k, g.n) : a * elems(g.m, g.k);
    const sim::GemmShape shape = weight ? weight_grad_shape(g) : input_grad_shape(g);
    const std::uint32_t label = weight ? l.wgrad[idx(lin.op)] : l.bwd[idx(lin.op)];
    const auto broadcast = [&] { return mesh_collective(e, c, Phase::Backward, OpKind::Broadcast, bcast_axis, bcast_bytes, kNoOp); };
    std::uint32_t next = broadcast(), reduce = kNoOp;
    for (int step = 0; step < q; ++step) {
        const std::uint32_t now = next;
        if (step + 1 < q) next = broadcast();
        e.wait_for(now);
        const double free_bytes = weight && step == q - 1 ? freed(c, lin.op) : 0.0;
        const std::uint32_t gemm = backward_gemm(e, c, label, shape, free_bytes);
        reduce = mesh_collective(e, c, Phase::Backward, OpKind::ReduceScatter, reduce_axis, partial_bytes, gemm);
    }
    return reduce;
}

// --- 3d ---------------------------------------------------------------------------------------
constexpr int kWeightGroup = 1;
// QKV and FC1 gather their input over axis 0 and scatter their output over axis 2; the
// projection and FC2 the other way round (ColossalAI swaps the groups after every Linear3D).
int input_group(const ModeLinear& lin) { return lin.second ? 2 : 0; }
int output_group(const ModeLinear& lin) { return lin.second ? 0 : 2; }

std::uint32_t cube_forward(OpEmitter& e, const LayerContext& c, Phase ph, const ModeLinear& lin) {
    const sim::GemmShape g = whole_gemm(c, lin, 1);  // [M/q, k/q] x [k/q, n/q]
    const double a = c.dims.act_bytes;
    e.wait_for(mesh_collective(e, c, ph, OpKind::AllGather, input_group(lin), a * elems(g.m, g.k), e.last_compute()));
    e.wait_for(mesh_collective(e, c, ph, OpKind::AllGather, kWeightGroup, a * elems(g.k, g.n), kNoOp));
    const std::uint32_t gemm = forward_gemm(e, c, ph, lin, g, 1.0);
    return mesh_collective(e, c, ph, OpKind::ReduceScatter, output_group(lin), a * elems(g.m, g.n), gemm);
}

std::uint32_t cube_dgrad(OpEmitter& e, const LayerContext& c, const ModeLinear& lin) {
    const sim::GemmShape g = whole_gemm(c, lin, 1);
    const double a = c.dims.act_bytes;
    const Phase ph = Phase::Backward;
    e.wait_for(mesh_collective(e, c, ph, OpKind::AllGather, output_group(lin), a * elems(g.m, g.n), e.last_compute()));
    const std::uint32_t gemm = backward_gemm(e, c, c.labels->bwd[idx(lin.op)], input_grad_shape(g), 0.0);
    return mesh_collective(e, c, ph, OpKind::ReduceScatter, input_group(lin), a * elems(g.m, g.k), gemm);
}

std::uint32_t cube_wgrad(OpEmitter& e, const LayerContext& c, const ModeLinear& lin) {
    const sim::GemmShape g = whole_gemm(c, lin, 1);
    const std::uint32_t gemm =
        backward_gemm(e, c, c.labels->wgrad[idx(lin.op)], weight_grad_shape(g), freed(c, lin.op));
    return mesh_collective(e, c, Phase::Backward, OpKind::ReduceScatter, kWeightGroup,
                           c.dims.act_bytes * elems(g.k, g.n), gemm);
}

// --- atp --------------------------------------------------------------------------------------
// The axis over which the forward output of `lin` is partial (the input gradient: the other one).
int atp_output_axis(const TensorMesh& m, const ModeLinear& lin) {
    return lin.second ? m.column_axis() : m.hidden_axis();
}

// The hidden-axis sum of an interior's boundary: a reduce-scatter by rows under the token split
// (the same buffer: the planner's full buffer for a reduce-scatter, one rank's for an all-reduce).
OpKind hidden_sum(const LayerContext& c, const ModeLinear& lin) {
    return atp_half_split(c.dims, lin) ? OpKind::ReduceScatter : OpKind::AllReduce;
}

}  // namespace

std::uint32_t mesh_collective(OpEmitter& e, const LayerContext& c, Phase ph, OpKind kind, int axis, double bytes,
                              std::uint32_t after) {
    if (c.dims.mesh.size(axis) <= 1) return kNoOp;
    const auto p = static_cast<std::size_t>(ph);
    const std::uint32_t label = kind == OpKind::Broadcast
                                    ? c.labels->tp_broadcast[p]
                                    : c.labels->tp[p][kind == OpKind::AllReduce ? 0 : (kind == OpKind::AllGather ? 1 : 2)];
    return e.comm(comm_op(kind, label, bytes, stream::kTensorComm, slot::tensor_axis(axis), comm_class::kTensor),
                  after);
}

std::uint32_t mode_linear_forward(OpEmitter& e, const LayerContext& c, Phase ph, const ModeLinear& lin, int chunk,
                                  int chunks) {
    switch (c.dims.mesh.mode) {
        case TensorMode::TwoD: return summa_forward(e, c, ph, lin);
        case TensorMode::ThreeD: return cube_forward(e, c, ph, lin);
        default: break;
    }
    (void)chunk;  // every chunk has the same shape
    const sim::GemmShape g = whole_gemm(c, lin, chunks);
    const std::uint32_t gemm = forward_gemm(e, c, ph, lin, g, 1.0 / chunks);
    const OpKind kind = lin.second ? OpKind::AllReduce : hidden_sum(c, lin);
    return mesh_collective(e, c, ph, kind, atp_output_axis(c.dims.mesh, lin), c.dims.act_bytes * elems(g.m, g.n), gemm);
}

bool atp_half_split(const LayerDims& d, const ModeLinear& lin) {
    const bool attention = lin.op == LayerOp::Qkv || lin.op == LayerOp::Proj;
    return attention ? atp_splits_attention(d) : atp_splits_mlp(d);
}

std::uint32_t mode_interior_gather(OpEmitter& e, const LayerContext& c, Phase ph, const ModeLinear& lin, int chunks) {
    if (c.dims.mesh.mode != TensorMode::Atp || !atp_half_split(c.dims, lin)) return kNoOp;
    // Forward: the second linear's input [M/c, K/dc]; backward: the first linear's output gradient
    // [M/c, N/dc]. Full buffer (planner convention), of which each device holds 1/dr.
    const sim::GemmShape g = whole_gemm(c, lin, chunks);
    const double bytes = c.dims.act_bytes * (lin.second ? elems(g.m, g.k) : elems(g.m, g.n));
    return mesh_collective(e, c, ph, OpKind::AllGather, c.dims.mesh.hidden_axis(), bytes, e.last_compute());
}

std::uint32_t mode_linear_dgrad(OpEmitter& e, const LayerContext& c, const ModeLinear& lin, int chunks) {
    switch (c.dims.mesh.mode) {
        case TensorMode::TwoD: return summa_backward(e, c, lin, false);
        case TensorMode::ThreeD: return cube_dgrad(e, c, lin);
        default: break;
    }
    const sim::GemmShape g = whole_gemm(c, lin, chunks);
    const std::uint32_t gemm = backward_gemm(e, c, c.labels->bwd[idx(lin.op)], input_grad_shape(g), 0.0);
    const TensorMesh& m = c.dims.mesh;
    const int axis = atp_output_axis(m, lin) == m.column_axis() ? m.hidden_axis() : m.column_axis();
    const OpKind kind = lin.second ? hidden_sum(c, lin) : OpKind::AllReduce;
    return mesh_collective(e, c, Phase::Backward, kind, axis, c.dims.act_bytes * elems(g.m, g.k), gemm);
}

std::uint32_t mode_linear_wgrad(OpEmitter& e, const LayerContext& c, const ModeLinear& lin) {
    switch (c.dims.mesh.mode) {
        case TensorMode::TwoD: return summa_backward(e, c, lin, true);
        case TensorMode::ThreeD: return cube_wgrad(e, c, lin);
        default: break;
    }
    backward_gemm(e, c, c.labels->wgrad[idx(lin.op)], weight_grad_shape(whole_gemm(c, lin, 1)), freed(c, lin.op));
    return kNoOp;
}

}  // namespace cuboid
