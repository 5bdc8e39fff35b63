#include "validate/cpu/rank_runner.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace cuboid::cpu {

const char* field_name(Field f) {
    static constexpr const char* kNames[] = {
        "X", "Ln1", "Ln1Full", "Q", "K", "V", "Scores", "Probs", "ProbsD", "Ctx", "ProjPartial", "ProjRed", "H1",
        "Ln2", "Ln2Full", "A1", "G1", "Fc2Partial", "Fc2Red", "GOut", "GOutFull", "DG1", "DA1", "Ln2Regather",
        "DLn2Partial", "DLn2", "GH1", "GProj", "GProjFull", "DCtx", "DProbsD", "DProbs", "DScores", "DQ", "DK", "DV",
        "Ln1Regather", "DLn1Partial", "DLn1", "EmbPartial", "EmbRed", "GEmb", "GEmbFull", "LnfIn", "Lnf", "LnfFull",
        "Logits", "XentMax", "XentTarget", "XentSumExp", "XentDone", "DLogits", "DLnfPartial", "DLnf", "Stats1",
        "Stats1Sum", "Stats2", "Stats2Sum", "QkvPartial", "QkvRed", "Fc1Partial", "Fc1Red", "DG1Partial", "DCtxPartial",
        "DStats1", "DStats1Sum", "DStats2", "DStats2Sum", "CtxFull", "G1Full", "DA1Full", "DQkvFull", "Out", "Lse", "StepOut", "StepLse", "OutAcc", "LseAcc", "KvAll", "DKvAll", "QH", "KH", "VH", "OH",
        "DCtxH", "DQH", "DKH", "DVH", "DkvOut", "RouterLogits", "RouteWeights", "MoeIn", "MoeBack", "ExpertX", "ExpertA",
        "ExpertG", "ExpertY", "MoeOut", "SharedA1", "SharedG1", "SharedPartial", "SharedRed", "DRoute", "DRouterLogits",
        "DExpertY", "DExpertG", "DExpertA", "DLn2Routed", "DSharedG1", "DSharedA1"};
    static_assert(std::size(kNames) == static_cast<std::size_t>(Field::DSharedA1) + 1, "one name per field");
    return kNames[static_cast<std::size_t>(f)];
}

RankRunner::RankRunner(const RunContext& ctx, std::uint32_t rank, const GptParams& full) : ctx_(ctx), rank_(rank) {
    const Layout& l = *ctx.layout;
    tp_ = l.tp_of(rank);
    dp_ = l.dp_of(rank);
    stage_ = l.stage_of(rank);
    cp_ = l.context_of(dp_);
    k_ = std::max(1, ctx.overlap_chunks);
    if (atp()) {
        chunks_ = std::max(1, ctx.atp_chunks);
        const auto axis = static_cast<std::size_t>(ctx.atp_column_axis);
        atp_ = {l.mesh_coord(tp_, static_cast<int>(axis)), l.tensor_mesh[axis], l.mesh_coord(tp_, static_cast<int>(1 - axis)),
                l.tensor_mesh[1 - axis]};
    }
    if (summa()) atp_ = {l.mesh_coord(tp_, 0), l.tensor_mesh[0], l.mesh_coord(tp_, 1), l.tensor_mesh[1], true};
    if (cube()) {
        cube_ = {l.mesh_coord(tp_, 0), l.mesh_coord(tp_, 1), l.mesh_coord(tp_, 2), l.tensor_mesh[0]};
        atp_ = {cube_.a0, cube_.q, cube_.a2, cube_.q};  // heads by a0, hidden by a2
    }
    // Expert layers regroup a stage's ranks q = tp + t * dp as q = a + etp * (e + ep * f)
    // (strategies/program_groups.cpp).
    if (ctx.dims.experts > 0) {
        const int q = tp_ + t() * dp_;
        expert_ = {(q / l.expert_tensor) % l.expert, l.expert, q % l.expert_tensor, l.expert_tensor};
    }
    // The rank holds the shards of its blocks; other parameters stay empty.
    out_.weights = empty_like(full);
    out_.blocks = held_blocks();
    std::vector<Mat*> mine;
    for_each_param(out_.weights, [&](const ParamRef&, Mat& m) { mine.push_back(&m); });
    std::size_t i = 0;
    for_each_param(full, [&](const ParamRef& ref, const Mat& m) {
        const bool held = std::find(out_.blocks.begin(), out_.blocks.end(), ref.block) != out_.blocks.end();
        if (!held) return void(++i);
        if (is_expert(ref.split)) *mine[i] = expert_shard_of(m, ref.split, ctx.dims, expert_);
        else if (cube() && ref.block >= 0) *mine[i] = cube_shard(ref, m, ctx.dims, cube_);
        else if (mesh() && ref.block >= 0) *mine[i] = atp_shard(ref, m, ctx.dims, atp_);
        else *mine[i] = shard_of(m, ref.split, ctx.dims, tp_, t());
        ++i;
    });
    // One stage holds both ends: the output layer uses the embedding itself, there is no copy.
    if (stage_ == 0 && stage_ == l.head_stage()) out_.weights.wout = Mat();
    out_.grads = zeros_like(out_.weights);
    out_.owned = zeros_like(out_.weights);
    for_each_param(out_.owned, [](const ParamRef&, Mat& m) { m.setOnes(); });
    shard_weights();
}

std::vector<int> RankRunner::held_blocks() const {
    const Layout& l = *ctx_.layout;
    std::vector<int> blocks;
    if (stage_ == 0) blocks.push_back(kEmbeddingBlock);
    for (int c = 0; c < l.virtual_stages; ++c)
        for (int i = 0; i < l.layers_of(stage_, c); ++i) blocks.push_back(l.first_layer_of(stage_, c) + i);
    if (stage_ == l.head_stage()) blocks.push_back(kHeadBlock);
    return blocks;
}

int RankRunner::region_rows() const {
    const int tokens = ctx_.micro_batch * local_seq();
    return ctx_.sp ? tokens / t() : tokens;
}

void RankRunner::run() {
    const sim::OpList& list = ctx_.program->op_lists[ctx_.program->ranks[rank_].op_list];
    const std::vector<OpTag>& tags = (*ctx_.tags)[ctx_.program->ranks[rank_].op_list];
    if (tags.size() != list.ops.size()) throw std::runtime_error("tag table does not match the op list");
    list_ = &list;
    tags_ = &tags;
    consumer_.assign(list.ops.size(), 0xFFFFFFFFu);
    // Host dispatch ops (the framework issuing the next op) compute nothing: no consumers, no run.
    const auto host = [&](std::uint32_t i) { return list.ops[i].kind == sim::OpKind::HostDispatch; };
    for (std::uint32_t i = list.ops.size(); i-- > 0;)
        for (std::uint32_t k = 0; k < list.ops[i].dep_count && !host(i); ++k)
            consumer_[list.deps[list.ops[i].first_dep + k]] = i;
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const sim::Op& op = list.ops[i];
        if (host(i)) continue;
        for (std::uint32_t k = 0; k < op.dep_count; ++k)
            if (list.deps[op.first_dep + k] >= i) throw std::runtime_error("op " + std::to_string(i) + " depends on a later op");
        const OpTag& tag = tags[i];
        where_ = "rank " + std::to_string(rank_) + " op " + std::to_string(i) + " '" + label(op) + "' (layer " +
                 std::to_string(tag.layer) + ", micro-batch " + std::to_string(tag.micro) + ", sub-batch " +
                 std::to_string(tag.sub_chunk) + ")";
        try {
            execute(i, op, ctx_.codes[op.label], tag);
        } catch (const AbortedError&) {
            throw;
        } catch (const std::exception& e) {
            throw std::runtime_error(where_ + ": " + e.what());
        }
    }
}

void RankRunner::execute(std::uint32_t index, const sim::Op& op, const OpCode& code, const OpTag& tag) {
    index_ = index;
    switch (code.family) {
        case Family::LayerKernel:
            // A weight gradient reads no weights (a zero-bubble W pass runs without a gather).
            if (!code.wgrad) require_gathered(tag.layer, tag, code.phase);
            if (code.phase == Phase::Backward) layer_backward(code.op, code.wgrad, tag);
            else layer_forward(code.op, tag, code.phase, op);
            break;
        case Family::TpCollective: tp_collective(index, op); return;
        case Family::Embed:
            require_gathered(kEmbeddingBlock, tag, code.phase);
            embedding(code.phase, tag);
            break;
        case Family::EmbedDropout: embedding_dropout(code.phase, tag); break;
        case Family::FinalLn:
            require_gathered(kHeadBlock, tag, code.phase);
            head(code, tag);
            break;
        case Family::Logits:
        case Family::Xent: head(code, tag); break;
        case Family::XentReduce: xent_reduce(op, tag); return;
        case Family::SendAct:
        case Family::RecvAct:
        case Family::SendGrad:
        case Family::RecvGrad:
        case Family::PpGather: pipeline(op, code, tag); return;
        case Family::DpReduce: dp_reduce(op); return;
        case Family::DpGather: dp_gather(op); return;
        case Family::TpGradSync:
            take_sharded_grads();
            sync_partial_grads(op);
            return;
        case Family::EmbGradSync:
            take_sharded_grads();
            sync_tied_embedding(op);
            return;
        case Family::Optimizer:
            take_sharded_grads();
            optimizer(op);
            break;
        case Family::FsdpGather: fsdp_gather(op, tag, code.phase, Part::Dense); return;
        case Family::FsdpReduceScatter: fsdp_reduce_scatter(op, tag, Part::Dense); return;
        case Family::FsdpExpertGather: fsdp_gather(op, tag, code.phase, Part::Experts); return;
        case Family::FsdpExpertReduceScatter: fsdp_reduce_scatter(op, tag, Part::Experts); return;
        case Family::FsdpReplicaReduce: fsdp_replica_reduce(op, tag, Part::Dense); return;
        case Family::FsdpExpertReplicaReduce: fsdp_replica_reduce(op, tag, Part::Experts); return;
        case Family::ContextKernel: context_kernel(code, tag, op); break;
        case Family::ContextComm: context_comm(code, tag, op); return;
        case Family::MoeKernel:
            // The routed experts' GEMMs read the experts' weights, the router and the shared
            // experts the layer's dense ones; a weight gradient reads none.
            if (!code.wgrad && (code.moe == MoeOp::ExpertFc1 || code.moe == MoeOp::ExpertFc2))
                require_gathered(tag.layer, tag, code.phase, Part::Experts);
            else if (!code.wgrad && (code.moe == MoeOp::Router || code.moe == MoeOp::SharedFc1 || code.moe == MoeOp::SharedFc2))
                require_gathered(tag.layer, tag, code.phase);
            if (code.phase == Phase::Backward) moe_backward(code.moe, code.wgrad, tag);
            else moe_forward(code.moe, tag, code.phase, op);
            break;
        case Family::MoeComm: moe_exchange(code, tag, op); return;
        case Family::EdpReduce: edp_reduce(op); return;
        case Family::EdpGather: edp_gather(op); return;
        case Family::NumericallyInert: return;  // not the last kernel: collectives look past it
        case Family::Unknown: throw std::runtime_error("label not understood by the CPU executor");
    }
    last_compute_index_ = index;
}

const Mat& RankRunner::need(Cache& c, Field f) const {
    const auto it = c.find(f);
    if (it == c.end()) throw std::runtime_error(std::string("needs ") + field_name(f) + ", which no op provided");
    return it->second;
}

Mat RankRunner::take(std::map<Pos, Mat>& from, const Pos& k, const char* what) {
    const auto it = from.find(k);
    if (it == from.end())
        throw std::runtime_error(std::string("needs the ") + what + " at layer position " + std::to_string(k.second) +
                                 ", which no op provided");
    Mat m = std::move(it->second);
    from.erase(it);
    return m;
}

void RankRunner::put(Cache& c, const Key& k, Field f, Mat value, Phase phase) {
    if (phase == Phase::Recompute) {
        // Recomputation must reproduce what the forward computed (kept or dropped).
        const auto kept = c.find(f);
        const auto dropped = shadow_.find({k, f});
        const Mat* first = kept != c.end() ? &kept->second : (dropped != shadow_.end() ? &dropped->second : nullptr);
        if (first != nullptr) {
            if (first->rows() != value.rows() || first->cols() != value.cols())
                throw std::runtime_error(std::string("recomputed ") + field_name(f) + " has another shape");
            out_.recompute_diff = std::max(out_.recompute_diff, (*first - value).cwiseAbs().maxCoeff());
        }
    }
    c[f] = std::move(value);
}

const Mat& RankRunner::reduced(Cache& c, Field partial, Field sum) const {
    return t() == 1 ? need(c, partial) : need(c, sum);
}

void RankRunner::finish_block(int block) {
    if (++backward_count_[block] != ctx_.layout->micro_batches) return;
    final_unreduced_.insert(block);
    if (has_experts(block)) expert_unreduced_.insert(block);
}

}  // namespace cuboid::cpu
