// Communication ops as data exchange between rank threads: which tensor each op moves follows
// from the compute op it comes after (the builder issues every collective right after the
// kernel that produced its buffer), the op's kind says how the members' buffers combine.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "strategies/group_slots.hpp"
#include "validate/cpu/kernels.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

Buffer encode(const Mat& m) {
    Buffer b{static_cast<double>(m.rows()), static_cast<double>(m.cols())};
    b.insert(b.end(), m.data(), m.data() + m.size());
    return b;
}

Mat decode(const Buffer& b) {
    if (b.size() < 2) throw std::runtime_error("malformed message");
    const auto rows = static_cast<Eigen::Index>(b[0]), cols = static_cast<Eigen::Index>(b[1]);
    if (static_cast<std::size_t>(rows * cols) + 2 != b.size()) throw std::runtime_error("malformed message");
    return Eigen::Map<const Mat>(b.data() + 2, rows, cols);
}

// The buffers a tensor-parallel collective reads and writes, from the kernel before it.
struct TpBuffers {
    int block = 0;  // layer, or kEmbeddingBlock / kHeadBlock
    Field src = Field::X, dst = Field::X;
};

// `own`: the collective's phase. A recomputation's gather right after the backward's gather of
// the output gradient (its producer B.bda2) is the shared_experts module's checkpointed forward
// gathering the router's norm output for the shared FC1 (strategies/moe_layer.cpp).
TpBuffers tp_buffers(const OpCode& last, Phase own, int layer) {
    switch (last.family) {
        case Family::Embed: return {kEmbeddingBlock, Field::EmbPartial, Field::EmbRed};
        case Family::EmbedDropout: return {kEmbeddingBlock, Field::GEmb, Field::GEmbFull};
        case Family::FinalLn: return {kHeadBlock, Field::Lnf, Field::LnfFull};
        case Family::Xent: return {kHeadBlock, Field::Lnf, Field::LnfFull};  // sequence parallel: regather for the weight gradient
        case Family::Logits: return {kHeadBlock, Field::DLnfPartial, Field::DLnf};
        case Family::LayerKernel:
        case Family::ContextKernel: break;  // a ring step: the attention's (op Attn)
        default: throw std::runtime_error("tensor-parallel collective after an op that produces no buffer for it");
    }
    // A zero-bubble W pass re-gathers each LayerNorm output right after the weight gradient before
    // the one that reads it (strategies/layer_ops.cpp weight_grad_pass).
    if (last.wgrad && last.op == LayerOp::Fc2) return {layer, Field::Ln2, Field::Ln2Regather};
    if (last.wgrad && last.op == LayerOp::Proj) return {layer, Field::Ln1, Field::Ln1Regather};
    switch (last.op) {
        case LayerOp::Ln1: return {layer, Field::Ln1, Field::Ln1Full};
        case LayerOp::Proj: return {layer, Field::ProjPartial, Field::ProjRed};
        case LayerOp::Ln2: return {layer, Field::Ln2, Field::Ln2Full};
        case LayerOp::Fc2: return {layer, Field::Fc2Partial, Field::Fc2Red};
        case LayerOp::Bda2:
            if (own == Phase::Recompute) return {layer, Field::Ln2, Field::Ln2Full};
            return {layer, Field::GOut, Field::GOutFull};
        case LayerOp::Act: return {layer, Field::Ln2, Field::Ln2Regather};
        case LayerOp::Fc1: return {layer, Field::DLn2Partial, Field::DLn2};
        case LayerOp::Bda1: return {layer, Field::GProj, Field::GProjFull};
        case LayerOp::Qk:
        case LayerOp::Attn: return {layer, Field::Ln1, Field::Ln1Regather};  // the last kernel before QKV's backward
        case LayerOp::Qkv: return {layer, Field::DLn1Partial, Field::DLn1};
        default: break;
    }
    throw std::runtime_error("tensor-parallel collective after a kernel that produces no buffer for it");
}

// A mixture-of-experts layer's tensor-parallel collectives, all around its shared experts
// (strategies/moe_layer.cpp): the forward gathers LayerNorm 2's output after the un-permutation and
// reduces the shared FC2's partial output; the backward reduces FC1's input gradient and re-gathers
// LayerNorm 2's output for FC1's weight gradient, both after FC1's input-gradient GEMM, or under a
// split backward the W pass re-gathers it after the shared FC2's weight gradient. The
// shared_experts module inside the moe module's checkpoint gathers LayerNorm 2's output once more
// right after the checkpoint's shared FC2 and its reduction.
TpBuffers moe_tp_buffers(const OpCode& last, sim::OpKind kind, int layer) {
    const bool gather = kind == sim::OpKind::AllGather;
    if (last.phase != Phase::Backward) {
        if ((last.moe == MoeOp::Unpermute || last.moe == MoeOp::SharedFc2) && gather)
            return {layer, Field::Ln2, Field::Ln2Full};
        if (last.moe == MoeOp::SharedFc2 && !gather) return {layer, Field::SharedPartial, Field::SharedRed};
    } else if (last.moe == MoeOp::SharedFc1 && !last.wgrad) {
        return gather ? TpBuffers{layer, Field::Ln2, Field::Ln2Regather} : TpBuffers{layer, Field::DLn2Partial, Field::DLn2};
    } else if (last.moe == MoeOp::SharedFc2 && last.wgrad && gather) {
        return {layer, Field::Ln2, Field::Ln2Regather};
    }
    throw std::runtime_error("tensor-parallel collective after a mixture-of-experts kernel that produces no buffer for it");
}

// Under ATP: the partial sums of the linears, the LayerNorm statistics and the token split's
// gathers of the interiors (atp_exec.cpp).
TpBuffers atp_buffers(const OpCode& code, int layer) {
    const bool back = code.phase == Phase::Backward;
    switch (code.op) {
        case LayerOp::Av: return {layer, Field::Ctx, Field::CtxFull};
        case LayerOp::Act: return back ? TpBuffers{layer, Field::DA1, Field::DA1Full} : TpBuffers{layer, Field::G1, Field::G1Full};
        case LayerOp::Qk: return {layer, Field::DQkvFull, Field::DQkvFull};  // the QKV gradient, assembled first
        case LayerOp::Ln1: return back ? TpBuffers{layer, Field::DStats1, Field::DStats1Sum} : TpBuffers{layer, Field::Stats1, Field::Stats1Sum};
        case LayerOp::Qkv: return back ? TpBuffers{layer, Field::DLn1Partial, Field::DLn1} : TpBuffers{layer, Field::QkvPartial, Field::QkvRed};
        case LayerOp::Proj: return back ? TpBuffers{layer, Field::DCtxPartial, Field::DCtx} : TpBuffers{layer, Field::ProjPartial, Field::ProjRed};
        case LayerOp::Ln2: return back ? TpBuffers{layer, Field::DStats2, Field::DStats2Sum} : TpBuffers{layer, Field::Stats2, Field::Stats2Sum};
        case LayerOp::Fc1: return back ? TpBuffers{layer, Field::DLn2Partial, Field::DLn2} : TpBuffers{layer, Field::Fc1Partial, Field::Fc1Red};
        case LayerOp::Fc2: return back ? TpBuffers{layer, Field::DG1Partial, Field::DG1} : TpBuffers{layer, Field::Fc2Partial, Field::Fc2Red};
        default: break;
    }
    throw std::runtime_error("ATP reduction after a kernel that produces no buffer for it");
}

}  // namespace

std::vector<Buffer> RankRunner::exchange(std::uint16_t slot, const std::string& key, Buffer data, std::size_t* member) {
    const sim::RankProgram& rp = ctx_.program->ranks[rank_];
    const std::uint32_t group = rp.groups.at(slot);
    const auto& ranks = ctx_.program->groups[group].ranks;
    const auto it = std::find(ranks.begin(), ranks.end(), rank_);
    if (it == ranks.end()) throw std::runtime_error("rank is not a member of its op's group");
    *member = static_cast<std::size_t>(it - ranks.begin());
    return ctx_.fabric->exchange(group, ranks.size(), *member, instances_[group]++, key, std::move(data));
}

std::vector<Mat> RankRunner::exchange_mats(std::uint16_t slot, const std::string& key, const Mat& in, std::size_t* member) {
    std::vector<Mat> mats;
    for (const Buffer& b : exchange(slot, key, encode(in), member)) mats.push_back(decode(b));
    return mats;
}

Mat RankRunner::collective(const sim::Op& op, std::uint16_t slot, const Mat& in, const std::string& what) {
    std::size_t member = 0;
    const std::string key = label(op) + "#" + std::to_string(static_cast<int>(op.kind));
    const std::vector<Mat> mats = exchange_mats(slot, key, in, &member);
    const auto sum = [&] {
        Mat s = Mat::Zero(in.rows(), in.cols());
        for (const Mat& m : mats) {
            if (m.rows() != s.rows() || m.cols() != s.cols()) throw std::runtime_error(what + ": members' buffers differ in shape");
            s += m;
        }
        return s;
    };
    switch (op.kind) {
        case sim::OpKind::AllReduce: return sum();
        case sim::OpKind::ReduceScatter: {
            const Mat s = sum();
            if (s.rows() % static_cast<Eigen::Index>(mats.size()) != 0) throw std::runtime_error(what + ": rows do not split evenly");
            return row_block(s, static_cast<int>(member), static_cast<int>(mats.size()));
        }
        case sim::OpKind::AllGather: return stack_rows(mats);
        case sim::OpKind::Broadcast: return mats.front();
        default: throw std::runtime_error(what + ": collective kind not supported by the CPU executor");
    }
}

// The buffer is that of the compute op the collective depends on (a sub-batch's reduction may be
// issued after the next sub-batch's kernels); a collective without one takes the last kernel's.
void RankRunner::tp_collective(std::uint32_t index, const sim::Op& op) {
    if (summa() && op.kind == sim::OpKind::Broadcast) return summa_broadcast(index, op);
    if (cube() && op.kind == sim::OpKind::AllGather && op.dep_count == 0 && cube_collective(index, op, 0)) return;
    if (atp() && op.kind == sim::OpKind::AllGather && (*tags_)[index].layer < 0)
        return atp_edge_gather(op, (*tags_)[index], ctx_.codes[op.label].phase);
    std::uint32_t producer = last_compute_index_;
    for (std::uint32_t k = 0; k < op.dep_count; ++k) {
        const std::uint32_t dep = list_->deps[op.first_dep + k];
        const Family f = ctx_.codes[list_->ops[dep].label].family;
        if (f != Family::TpCollective && f != Family::XentReduce && f != Family::ContextComm) {
            producer = dep;
            break;
        }
    }
    if (producer >= index) throw std::runtime_error("tensor-parallel collective before any kernel");
    const OpTag& tag = (*tags_)[producer];
    const OpCode& code = ctx_.codes[list_->ops[producer].label];
    const bool mode = mesh() && code.family == Family::LayerKernel;
    if ((summa() || cube()) && code.family == Family::FinalLn && op.kind == sim::OpKind::AllReduce)
        return final_norm_statistics(op, tag, code.phase);
    if (summa() && mode && code.phase == Phase::Backward && op.kind == sim::OpKind::ReduceScatter) return summa_reduce(op, producer);
    if (cube() && mode && cube_collective(index, op, producer)) return;
    const TpBuffers b = mode ? atp_buffers(code, tag.layer)
                             : (code.family == Family::MoeKernel ? moe_tp_buffers(code, op.kind, tag.layer)
                                                                 : tp_buffers(code, ctx_.codes[op.label].phase, tag.layer));
    const Key key{tag.micro, b.block, b.block >= 0 ? sub_of(tag) : 0};
    Cache& c = cache(key);
    if (atp() && mode) atp_before_collective(b.src, key);
    if ((summa() || cube()) && !mode) c[b.dst] = mesh_blocks_collective(op.kind, op.group_slot, need(c, b.src), label(op));
    else c[b.dst] = collective(op, op.group_slot, need(c, b.src), std::string(field_name(b.src)));
    if (mode) atp_after_collective(b.dst, key, code.phase);
}

void RankRunner::xent_reduce(const sim::Op& op, const OpTag& tag) {
    Cache& c = cache({tag.micro, kHeadBlock, 0});
    const int step = xent_reductions_++;
    if (step == 0) {  // the max over the vocabulary shards (an all-reduce with MAX)
        const Mat local = need(c, Field::Logits).rowwise().maxCoeff();
        std::size_t member = 0;
        const auto parts = exchange(op.group_slot, label(op) + "#max", encode(local), &member);
        Mat mx = local;
        for (const Buffer& p : parts) mx = mx.cwiseMax(decode(p));
        c[Field::XentMax] = mx;
        return;
    }
    const Field f = step == 1 ? Field::XentTarget : Field::XentSumExp;
    c[f] = collective(op, op.group_slot, need(c, f), "cross-entropy sum");
    if (step == 2) finish_xent(c);
}

// Every device's [M/dc, h/dr] piece placed at its rows block (column axis) and hidden block.
Mat RankRunner::atp_pipeline_gather(const sim::Op& op, const Mat& piece) {
    if (op.kind != sim::OpKind::AllGather || op.group_slot != slot::kTensor)
        throw std::runtime_error("pipeline gather of ATP expected as an all-gather over the tensor group");
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op), encode(piece), &member);
    const Layout& l = *ctx_.layout;
    const auto axis = ctx_.atp_column_axis;
    Mat out(piece.rows() * atp_.cols, piece.cols() * atp_.hids);
    for (std::size_t p = 0; p < parts.size(); ++p) {  // member p of the tensor group has tensor index p
        const int i = l.mesh_coord(static_cast<int>(p), axis), j = l.mesh_coord(static_cast<int>(p), 1 - axis);
        out.block(i * piece.rows(), j * piece.cols(), piece.rows(), piece.cols()) = decode(parts[p]);
    }
    return out;
}

void RankRunner::pipeline(const sim::Op& op, const OpCode& code, const OpTag& tag) {
    const Layout& l = *ctx_.layout;
    const int first = l.first_layer_of(stage_, tag.chunk), end = first + l.layers_of(stage_, tag.chunk);
    // Megatron's scatter/gather: without sequence parallelism each tensor rank sends 1/t of the
    // (replicated) activation and the receiver all-gathers it.
    // Under ATP the stage boundary holds the hidden block [M, h/dr] (the same on the dc devices of
    // the column axis): device (i, j) sends rows block i of it, so the t pieces are the whole
    // [M, h] once, and the gather gives every device the whole activation.
    const bool scatter = t() > 1 && !ctx_.sp;
    const std::uint32_t group = ctx_.program->ranks[rank_].groups.at(op.group_slot);
    const auto piece_of = [&](const Mat& m) { return atp() ? row_block(m, atp_.col, atp_.cols) : row_block(m, tp(), t()); };
    const auto send = [&](Mat m) { ctx_.fabric->send(group, encode(scatter ? piece_of(m) : m)); };
    switch (code.family) {
        case Family::SendAct: return send(take(act_, {tag.micro, end}, "activation to send"));
        case Family::SendGrad: return send(take(grad_, {tag.micro, first}, "gradient to send"));
        case Family::RecvAct:
            last_recv_ = {tag.micro, first};
            last_recv_grad_ = false;
            act_[last_recv_] = decode(ctx_.fabric->recv(group, label(op)));
            return;
        case Family::RecvGrad:
            last_recv_ = {tag.micro, end};
            last_recv_grad_ = true;
            grad_[last_recv_] = decode(ctx_.fabric->recv(group, label(op)));
            return;
        default: {
            Mat& m = (last_recv_grad_ ? grad_ : act_).at(last_recv_);
            m = atp() ? atp_pipeline_gather(op, m) : collective(op, op.group_slot, m, "pipeline gather");
        }
    }
}

}  // namespace cuboid::cpu
