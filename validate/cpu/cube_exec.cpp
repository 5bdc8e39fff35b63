// The 3d tensor mode (Bian et al. 2021; ColossalAI's Linear3D; strategies/tensor_modes/
// mode_linear.cpp) on device (a0, a1, a2) of the q x q x q cube. Layouts (M tokens):
//   residual stream     [M/q^2, h/q]: rows block a1, sub-block a0; hidden block a2
//   attention / MLP     [M/q^2, n/q]: rows block a1, sub-block a2; heads / MLP block a0
// QKV and FC1: gather the input over axis 0 ([M/q, k/q], rows a1, hidden a2) and the weight over
// axis 1 ([k/q, n/q]), multiply, reduce-scatter the partial product over axis 2 (the contracted
// hidden block). The projection and FC2 swap axes 0 and 2. Backward: gather the output gradient
// over the output axis, dX = dY W^T reduce-scattered over the input axis, dW = X^T dY over axis 1.
// A bias is added by the device at position 0 of the axis the partial product is summed over.
// LayerNorm, bias-dropout-add and their statistic all-reduces are those of atp_exec.cpp.
#include <stdexcept>

#include "strategies/group_slots.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

bool first_linear(LayerOp op) { return op == LayerOp::Qkv || op == LayerOp::Fc1; }
bool is_linear(LayerOp op) { return first_linear(op) || op == LayerOp::Proj || op == LayerOp::Fc2; }

Mat& weight_of(LayerParams& w, LayerOp op) {
    return op == LayerOp::Qkv ? w.wqkv : (op == LayerOp::Proj ? w.wproj : (op == LayerOp::Fc1 ? w.w1 : w.w2));
}
Mat& bias_of(LayerParams& w, LayerOp op) {
    return op == LayerOp::Qkv ? w.bqkv : (op == LayerOp::Proj ? w.bproj : (op == LayerOp::Fc1 ? w.b1 : w.b2));
}
// The linear's input gathered over its input axis, and its output gradient over its output axis.
Field gathered_input(LayerOp op) {
    return op == LayerOp::Qkv ? Field::Ln1Full : (op == LayerOp::Proj ? Field::CtxFull : (op == LayerOp::Fc1 ? Field::Ln2Full : Field::G1Full));
}
Field gathered_grad(LayerOp op) {
    return op == LayerOp::Qkv ? Field::DQkvFull : (op == LayerOp::Proj ? Field::GProjFull : (op == LayerOp::Fc1 ? Field::DA1Full : Field::GOutFull));
}
Field partial_of(LayerOp op, bool backward) {
    if (backward) return op == LayerOp::Qkv ? Field::DLn1Partial : (op == LayerOp::Proj ? Field::DCtxPartial : (op == LayerOp::Fc1 ? Field::DLn2Partial : Field::DG1Partial));
    return op == LayerOp::Qkv ? Field::QkvPartial : (op == LayerOp::Proj ? Field::ProjPartial : (op == LayerOp::Fc1 ? Field::Fc1Partial : Field::Fc2Partial));
}

// What an activation all-gather after `code` gathers (source, destination).
std::pair<Field, Field> gathered_by(const OpCode& code) {
    const bool back = code.phase == Phase::Backward;
    switch (code.op) {
        case LayerOp::Ln1: return {Field::Ln1, Field::Ln1Full};
        case LayerOp::Ln2: return {Field::Ln2, Field::Ln2Full};
        case LayerOp::Av: return {Field::Ctx, Field::CtxFull};
        case LayerOp::Act: return back ? std::pair{Field::DA1, Field::DA1Full} : std::pair{Field::G1, Field::G1Full};
        case LayerOp::Bda2: return {Field::GOut, Field::GOutFull};
        case LayerOp::Bda1: return {Field::GProj, Field::GProjFull};
        case LayerOp::Qk: return {Field::DQkvFull, Field::DQkvFull};  // the QKV gradient, assembled first
        default: break;
    }
    throw std::runtime_error("3d all-gather after a kernel that produces no buffer for it");
}

}  // namespace

bool RankRunner::cube_forward(LayerOp op, const Key& key) {
    if (!is_linear(op)) return false;
    Cache& c = cache(key);
    const auto w = cube_weights_.find({key, static_cast<int>(op)});
    if (w == cube_weights_.end()) throw std::runtime_error("3d linear without its gathered weight");
    LayerParams& p = out_.weights.layers.at(static_cast<std::size_t>(std::get<1>(key)));
    const Mat& x = need(c, gathered_input(op));
    const bool adds_bias = (first_linear(op) ? cube_.a2 : cube_.a0) == 0;
    Mat y = x * w->second;
    if (adds_bias) y.rowwise() += bias_of(p, op).row(0);
    c[partial_of(op, false)] = std::move(y);
    return true;
}

bool RankRunner::cube_backward(LayerOp op, bool wgrad, const Key& key) {
    if (!is_linear(op)) return false;
    Cache& c = cache(key);
    const Mat& dy = need(c, gathered_grad(op));
    LayerParams& g = out_.grads.layers.at(static_cast<std::size_t>(std::get<1>(key)));
    if (!wgrad) {
        const auto w = cube_weights_.find({key, static_cast<int>(op)});
        if (w == cube_weights_.end()) throw std::runtime_error("3d input gradient without the gathered weight");
        c[partial_of(op, true)] = dy * w->second.transpose();
        return true;
    }
    comm_out_[index_] = need(c, gathered_input(op)).transpose() * dy;
    // The first linears' bias gradients from the device's own rows (partial: see the optimizer).
    if (op == LayerOp::Qkv) {
        Mat dqkv(need(c, Field::DQ).rows(), 3 * need(c, Field::DQ).cols());
        dqkv << need(c, Field::DQ), need(c, Field::DK), need(c, Field::DV);
        g.bqkv += column_sums(dqkv);
    } else if (op == LayerOp::Fc1) {
        g.b1 += column_sums(need(c, Field::DA1));
    }
    return true;
}

// The 3d collectives that are not the shared reductions: gathers of weights (no dependency: the
// linear that uses it says which) and of activations, and the weight-gradient reduce-scatter.
bool RankRunner::cube_collective(std::uint32_t index, const sim::Op& op, std::uint32_t producer) {
    if (op.kind == sim::OpKind::AllGather && op.dep_count == 0) {
        const std::uint32_t user = consumer_.at(index);
        if (user == 0xFFFFFFFFu) throw std::runtime_error("weight gather that no kernel uses");
        const OpCode& code = ctx_.codes[list_->ops[user].label];
        const Key key = layer_key((*tags_)[user]);
        Mat& shard = weight_of(out_.weights.layers.at(static_cast<std::size_t>(std::get<1>(key))), code.op);
        cube_weights_[{key, static_cast<int>(code.op)}] = collective(op, op.group_slot, shard, "3d weight");
        return true;
    }
    const OpCode& code = ctx_.codes[list_->ops[producer].label];
    const Key key = layer_key((*tags_)[producer]);
    Cache& c = cache(key);
    if (op.kind == sim::OpKind::AllGather) {
        const auto [src, dst] = gathered_by(code);
        if (code.op == LayerOp::Qk) {
            c[Field::DQkvFull] = Mat(need(c, Field::DQ).rows(), 3 * need(c, Field::DQ).cols());
            c[Field::DQkvFull] << need(c, Field::DQ), need(c, Field::DK), need(c, Field::DV);
        }
        c[dst] = collective(op, op.group_slot, need(c, src), field_name(src));
        return true;
    }
    if (op.kind == sim::OpKind::ReduceScatter && code.wgrad) {
        const auto it = comm_out_.find(producer);
        if (it == comm_out_.end()) throw std::runtime_error("3d weight-gradient reduction without a partial product");
        weight_of(out_.grads.layers.at(static_cast<std::size_t>(std::get<1>(key))), code.op) +=
            collective(op, op.group_slot, it->second, "3d weight gradient");
        comm_out_.erase(it);
        return true;
    }
    return false;  // the partial products and LayerNorm statistics: the shared reductions
}

}  // namespace cuboid::cpu
