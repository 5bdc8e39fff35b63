// The 2d tensor mode (Optimus / SUMMA, strategies/tensor_modes/mode_linear.cpp) on device (i, j)
// of the q x q mesh: the residual stream is the block [M/q, h/q] (rows i, hidden j); every linear
// Y = X W runs in q steps, step l broadcasting X[i, l] along row i (axis 0, slot 6) and W[l, j]
// along column j (axis 1, slot 7) and adding their product to Y[i, j]. In the backward, step l of
// dX broadcasts W[l, j] along the column and reduces dY W[l, j]^T along the row to (i, l); step l of
// dW broadcasts X[i, l] along the row and reduces X[i, l]^T dY along the column to (l, j).
//
// How the program's ops are read (the program names no root and no step):
//  - the root of step l's broadcast, and the destination of its reduction, is member l of the
//    axis group (the device whose coordinate on that axis is l); l counts the broadcasts of the
//    same linear, pass and axis for the layer and micro-batch;
//  - a broadcast carries the operand its consumer (the GEMM that depends on it) needs: on the
//    row axis the linear's input, on the column axis its weight;
//  - the program models a step's reduce-to-one as a reduce-scatter of the block (same bytes); the
//    executor delivers the whole sum to member l;
//  - at the model's ends the tensor group's reduce-scatter and all-gather (the embedding, the
//    head) split the [M, h] activation into the q x q blocks (rows i, hidden j) rather than rows.
// LayerNorm, bias-dropout-add and their statistic all-reduces are those of atp_exec.cpp.
#include <stdexcept>

#include "strategies/group_slots.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

bool is_linear(LayerOp op) { return op == LayerOp::Qkv || op == LayerOp::Proj || op == LayerOp::Fc1 || op == LayerOp::Fc2; }

Buffer encode_block(const Mat& m) {
    Buffer b{static_cast<double>(m.rows()), static_cast<double>(m.cols())};
    b.insert(b.end(), m.data(), m.data() + m.size());
    return b;
}

Mat decode_block(const Buffer& b) {
    return Eigen::Map<const Mat>(b.data() + 2, static_cast<Eigen::Index>(b[0]), static_cast<Eigen::Index>(b[1]));
}

const Mat& weight_of(const LayerParams& w, LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return w.wqkv;
        case LayerOp::Proj: return w.wproj;
        case LayerOp::Fc1: return w.w1;
        default: return w.w2;
    }
}

Mat& weight_of(LayerParams& w, LayerOp op) { return const_cast<Mat&>(weight_of(static_cast<const LayerParams&>(w), op)); }

Mat& bias_of(LayerParams& w, LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return w.bqkv;
        case LayerOp::Proj: return w.bproj;
        case LayerOp::Fc1: return w.b1;
        default: return w.b2;
    }
}

Field input_of(LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return Field::Ln1;
        case LayerOp::Proj: return Field::Ctx;
        case LayerOp::Fc1: return Field::Ln2;
        default: return Field::G1;
    }
}

// Where a linear's output goes (forward) and its input gradient (backward).
Field output_of(LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return Field::QkvRed;
        case LayerOp::Proj: return Field::ProjRed;
        case LayerOp::Fc1: return Field::Fc1Red;
        default: return Field::Fc2Red;
    }
}

Field input_grad_of(LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return Field::DLn1;
        case LayerOp::Proj: return Field::DCtx;
        case LayerOp::Fc1: return Field::DLn2;
        default: return Field::DG1;
    }
}

int pass_of(Phase phase, bool wgrad) { return static_cast<int>(phase) * 2 + (wgrad ? 1 : 0); }

}  // namespace

std::size_t RankRunner::member_in(std::uint16_t slot) const {
    const auto& ranks = ctx_.program->groups[ctx_.program->ranks[rank_].groups.at(slot)].ranks;
    for (std::size_t m = 0; m < ranks.size(); ++m)
        if (ranks[m] == rank_) return m;
    throw std::runtime_error("rank is not a member of its op's group");
}

void RankRunner::summa_broadcast(std::uint32_t index, const sim::Op& op) {
    const std::uint32_t user = consumer_.at(index);
    if (user == 0xFFFFFFFFu) throw std::runtime_error("broadcast that no kernel uses");
    const OpCode& code = ctx_.codes[list_->ops[user].label];
    if (code.family != Family::LayerKernel || !is_linear(code.op)) throw std::runtime_error("broadcast not used by a linear");
    const Key key = layer_key((*tags_)[user]);
    const bool input = op.group_slot == slot::tensor_axis(0);
    const int step = steps_[{key, static_cast<int>(code.op), pass_of(code.phase, code.wgrad), op.group_slot}]++;
    const bool root = member_in(op.group_slot) == static_cast<std::size_t>(step);
    Mat mine(0, 0);
    if (root)
        mine = input ? need(cache(key), input_of(code.op))
                     : weight_of(out_.weights.layers.at(static_cast<std::size_t>(std::get<1>(key))), code.op);
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op) + "#" + std::to_string(step), encode_block(mine), &member);
    comm_out_[index] = decode_block(parts.at(static_cast<std::size_t>(step)));
}

bool RankRunner::summa_later_step(LayerOp op, const Key& key) const {
    return summa() && is_linear(op) && steps_.count({key, static_cast<int>(op), pass_of(Phase::Forward, false), -1}) > 0;
}

bool RankRunner::summa_forward(LayerOp op, const Key& key, Phase phase) {
    if (!is_linear(op)) return false;
    const sim::Op& o = list_->ops[index_];
    Mat x, w;
    for (std::uint32_t k = 0; k < o.dep_count; ++k) {
        const std::uint32_t dep = list_->deps[o.first_dep + k];
        const auto it = comm_out_.find(dep);
        if (it == comm_out_.end()) continue;
        (list_->ops[dep].group_slot == slot::tensor_axis(0) ? x : w) = std::move(it->second);
        comm_out_.erase(it);
    }
    if (x.size() == 0 || w.size() == 0) throw std::runtime_error("SUMMA step without its broadcast input and weight blocks");
    const int step = steps_[{key, static_cast<int>(op), pass_of(phase, false), -1}]++;
    Cache& c = cache(key);
    const Field out = output_of(op);
    LayerParams& p = out_.weights.layers.at(static_cast<std::size_t>(std::get<1>(key)));
    if (step == 0) c[out] = bias_of(p, op).replicate(x.rows(), 1);
    c[out] += x * w;
    if (step == atp_.cols - 1) atp_after_collective(out, key, phase);  // Q/K/V, FC1's output
    return true;
}

bool RankRunner::summa_backward(LayerOp op, bool wgrad, const Key& key) {
    if (!is_linear(op)) return false;
    Cache& c = cache(key);
    Mat dy;
    if (op == LayerOp::Qkv) {
        dy.resize(need(c, Field::DQ).rows(), 3 * need(c, Field::DQ).cols());
        dy << need(c, Field::DQ), need(c, Field::DK), need(c, Field::DV);
    } else {
        dy = need(c, op == LayerOp::Proj ? Field::GProj : (op == LayerOp::Fc1 ? Field::DA1 : Field::GOut));
    }
    const sim::Op& o = list_->ops[index_];
    Mat b;
    for (std::uint32_t k = 0; k < o.dep_count && b.size() == 0; ++k) {
        const auto it = comm_out_.find(list_->deps[o.first_dep + k]);
        if (it == comm_out_.end()) continue;
        b = std::move(it->second);
        comm_out_.erase(it);
    }
    if (b.size() == 0) throw std::runtime_error("SUMMA gradient step without its broadcast block");
    const int step = steps_[{key, static_cast<int>(op), pass_of(Phase::Backward, wgrad), -1}]++;
    LayerParams& g = out_.grads.layers.at(static_cast<std::size_t>(std::get<1>(key)));
    // The first linears' bias gradients (the second linears' are the bias-dropout-adds'), partial
    // over the row block (see the optimizer).
    if (wgrad && step == 0 && (op == LayerOp::Qkv || op == LayerOp::Fc1)) bias_of(g, op) += column_sums(dy);
    comm_out_[index_] = wgrad ? Mat(b.transpose() * dy) : Mat(dy * b.transpose());
    step_of_[index_] = step;
    return true;
}

// A step's reduction: the sum of the members' partial products, kept by member `step`.
void RankRunner::summa_reduce(const sim::Op& op, std::uint32_t producer) {
    const auto it = comm_out_.find(producer);
    if (it == comm_out_.end()) throw std::runtime_error("SUMMA reduction of a kernel without a partial product");
    const Mat partial = std::move(it->second);
    comm_out_.erase(it);
    const int step = step_of_.at(producer);
    const OpCode& code = ctx_.codes[list_->ops[producer].label];
    const Key key = layer_key((*tags_)[producer]);
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op) + "#" + std::to_string(step), encode_block(partial), &member);
    if (member != static_cast<std::size_t>(step)) return;
    Mat sum = Mat::Zero(partial.rows(), partial.cols());
    for (const Buffer& p : parts) sum += decode_block(p);
    if (code.wgrad) weight_of(out_.grads.layers.at(static_cast<std::size_t>(std::get<1>(key))), code.op) += sum;
    else cache(key)[input_grad_of(code.op)] = std::move(sum);
}

std::array<int, 4> RankRunner::edge_block(int tp) const {
    const Layout& l = *ctx_.layout;
    const int q = l.tensor_mesh[0];
    if (cube())  // the residual stream's rows (a1, sub-block a0), hidden block a2 (cube_exec.cpp)
        return {l.mesh_coord(tp, 1) * q + l.mesh_coord(tp, 0), q * q, l.mesh_coord(tp, 2), q};
    return {l.mesh_coord(tp, 1), q, l.mesh_coord(tp, 0), q};  // 2d: rows i, hidden j
}

Mat RankRunner::mesh_block(const Mat& full) const {
    const auto [r, rs, c, cs] = edge_block(tp_);
    const Eigen::Index rows = full.rows() / rs, cols = full.cols() / cs;
    return full.block(rows * r, cols * c, rows, cols);
}

// The tensor group's reduce-scatter (sum, then this device's block) or all-gather (every
// device's block in its place) of a [M, h] activation split into the q x q blocks.
Mat RankRunner::mesh_blocks_collective(sim::OpKind kind, std::uint16_t slot, const Mat& in, const std::string& key) {
    std::size_t member = 0;
    const auto parts = exchange(slot, key + "#" + std::to_string(static_cast<int>(kind)), encode_block(in), &member);
    if (kind == sim::OpKind::ReduceScatter) {
        Mat sum = Mat::Zero(in.rows(), in.cols());
        for (const Buffer& p : parts) sum += decode_block(p);
        return mesh_block(sum);
    }
    if (kind != sim::OpKind::AllGather) throw std::runtime_error("2d: collective of the tensor group neither a reduce-scatter nor an all-gather");
    const auto [r0, rs, c0, cs] = edge_block(tp_);
    Mat out(in.rows() * rs, in.cols() * cs);
    for (std::size_t p = 0; p < parts.size(); ++p) {  // member p has tensor index p
        const auto [r, unused_rs, c, unused_cs] = edge_block(static_cast<int>(p));
        out.block(r * in.rows(), c * in.cols(), in.rows(), in.cols()) = decode_block(parts[p]);
    }
    return out;
}

}  // namespace cuboid::cpu
