#include "strategies/tensor_modes/mode_shapes.hpp"

namespace cuboid {
namespace {

double dbl(std::int64_t x) { return static_cast<double>(x); }

std::int64_t rows_of(double x) { return static_cast<std::int64_t>(x + 0.5); }

}  // namespace

ModeLinear mode_linear(const LayerDims& d, LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return {op, d.h, d.qkv_width(), false};
        case LayerOp::Proj: return {op, d.q_width(), d.h, true};
        case LayerOp::Fc1: return {op, d.h, d.fc1_width(), false};
        default: return {LayerOp::Fc2, d.ffn, d.h, true};
    }
}

bool atp_token_split(std::int64_t rows, std::int64_t dr) { return dr > 1 && rows % dr == 0; }

bool atp_splits_attention(const LayerDims& d) {
    const TensorMesh& m = d.mesh;
    return m.mode == TensorMode::Atp && atp_token_split(d.b, m.size(m.hidden_axis()));
}

bool atp_splits_mlp(const LayerDims& d) {
    const TensorMesh& m = d.mesh;
    return m.mode == TensorMode::Atp && atp_token_split(d.tokens(), m.size(m.hidden_axis()));
}

ModeShares mode_shares(const LayerDims& d) {
    const TensorMesh& m = d.mesh;
    const double M = dbl(d.tokens()), b = dbl(d.b), h = dbl(d.h), t = dbl(d.t);
    ModeShares s;
    switch (m.mode) {
        case TensorMode::TwoD: {
            // Device (i, j): token rows split over i (axis 1), hidden columns over j (axis 0).
            const double q = m.q();
            s = {M / q, b / q, M / q, q, M * h / t, M / q, 0};
            break;
        }
        case TensorMode::ThreeD: {
            // Tokens over the input and weight groups (q^2 ways), hidden over the output group of
            // QKV (axis 2), seed_algorithms §2.1.
            const double q = m.q();
            s = {M / (q * q), b / (q * q), M / (q * q), q, M * h / t, M / (q * q), 2};
            break;
        }
        default: {
            const double dc = m.size(m.column_axis()), dr = m.size(m.hidden_axis());
            const double seqs = atp_splits_attention(d) ? b / dr : b, mlp = atp_splits_mlp(d) ? M / dr : M;
            s = {M, seqs, mlp, dc, M * h / dr, M, m.hidden_axis()};
            break;
        }
    }
    return s;
}

sim::GemmShape mode_linear_gemm(const LayerDims& d, const ModeLinear& lin, double rows) {
    const TensorMesh& m = d.mesh;
    if (m.mode == TensorMode::Atp) {
        // First linear: X_j [M, k/dr] x W1[j, i] [k/dr, n/dc], partial over the hidden axis.
        // Second: Z_i [M, k/dc] x W2[i, j] [k/dc, n/dr], partial over the column axis.
        const std::int64_t dc = m.size(m.column_axis()), dr = m.size(m.hidden_axis());
        const std::int64_t in_div = lin.second ? dc : dr, out_div = lin.second ? dr : dc;
        return {rows_of(rows), lin.n / out_div, lin.k / in_div, 1};
    }
    // 2d (one SUMMA step) and 3d (after the gathers): [M/q, k/q] x [k/q, n/q]. For 3d, `rows` is
    // the device's M/q^2 share; the gathered input has q times as many rows.
    const std::int64_t q = m.q();
    const double gemm_rows = m.mode == TensorMode::ThreeD ? rows * static_cast<double>(q) : rows;
    return {rows_of(gemm_rows), lin.n / q, lin.k / q, 1};
}

sim::GemmShape mode_qk_gemm(const LayerDims& d, double sequences, std::int64_t queries) {
    const ModeShares s = mode_shares(d);
    const auto batch = rows_of(sequences * dbl(d.heads) / s.head_div);
    return {queries, d.s, d.head_dim, batch};
}

sim::GemmShape mode_av_gemm(const LayerDims& d, double sequences, std::int64_t queries) {
    const ModeShares s = mode_shares(d);
    const auto batch = rows_of(sequences * dbl(d.heads) / s.head_div);
    return {queries, d.head_dim, d.s, batch};
}

PerLayerOp mode_stored_activations(const LayerDims& d) {
    const double a = d.act_bytes;
    const ModeShares s = mode_shares(d);
    const double scores = s.sequences * dbl(d.heads) / s.head_div * dbl(d.s) * dbl(d.s);
    constexpr double kMask = 1.0;
    // Input a linear's weight-gradient GEMM needs, on one device.
    const auto linear_input = [&](LayerOp op) {
        const ModeLinear lin = mode_linear(d, op);
        const sim::GemmShape g = mode_linear_gemm(d, lin, s.tokens);
        const double input = dbl(g.m) * dbl(g.k);
        // 2d: SUMMA re-broadcasts the blocks of X in the backward, so only the local block
        // [M/q, k/q] is kept (a step's g.k is k/q). 3d: the gathered X and W (ColossalAI).
        if (d.mesh.mode == TensorMode::ThreeD) return a * (input + dbl(g.k) * dbl(g.n));
        return a * input;
    };
    PerLayerOp m{};
    auto at = [&m](LayerOp op) -> double& { return m[static_cast<std::size_t>(op)]; };
    at(LayerOp::Ln1) = a * s.residual;
    at(LayerOp::Qkv) = linear_input(LayerOp::Qkv);
    const double attn_tokens = s.sequences * dbl(d.s);  // rows of Q, K, V and the context
    at(LayerOp::Qk) = a * attn_tokens * dbl(d.h + d.kv_width()) / s.head_div;
    at(LayerOp::Softmax) = a * scores;
    at(LayerOp::AttnDropout) = (kMask + a) * scores;
    at(LayerOp::Av) = a * attn_tokens * dbl(d.kv_width()) / s.head_div;
    at(LayerOp::Proj) = linear_input(LayerOp::Proj);
    at(LayerOp::Bda1) = (d.hidden_dropout ? kMask : 0.0) * s.residual;  // no hidden dropout: no mask
    at(LayerOp::Ln2) = a * s.residual;
    at(LayerOp::Fc1) = linear_input(LayerOp::Fc1);
    at(LayerOp::Act) = a * s.mlp_tokens * dbl(d.fc1_width()) / s.head_div;
    at(LayerOp::Fc2) = linear_input(LayerOp::Fc2);
    at(LayerOp::Bda2) = (d.hidden_dropout ? kMask : 0.0) * s.residual;
    return m;
}

}  // namespace cuboid
