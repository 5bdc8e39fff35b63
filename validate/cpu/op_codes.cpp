#include "validate/cpu/op_codes.hpp"

#include <unordered_map>

namespace cuboid::cpu {

std::vector<OpCode> decode_labels(const sim::Program& program) {
    // The builder's own label table, so names cannot drift apart.
    sim::Program scratch;
    const Labels l = intern_labels(scratch);
    std::unordered_map<std::string, OpCode> table;
    const auto add = [&](std::uint32_t label, OpCode c) { table.emplace(scratch.labels[label], c); };
    for (int i = 0; i < kLayerOpCount; ++i) {
        const auto op = static_cast<LayerOp>(i);
        const auto k = static_cast<std::size_t>(i);
        add(l.fwd[k], {Family::LayerKernel, Phase::Forward, op, false});
        add(l.rec[k], {Family::LayerKernel, Phase::Recompute, op, false});
        add(l.bwd[k], {Family::LayerKernel, Phase::Backward, op, false});
        if (l.wgrad[k] != l.bwd[k]) add(l.wgrad[k], {Family::LayerKernel, Phase::Backward, op, true});
    }
    for (std::size_t ph = 0; ph < 3; ++ph)
    {
        for (std::size_t c = 0; c < 3; ++c) add(l.tp[ph][c], {Family::TpCollective, static_cast<Phase>(ph)});
        add(l.tp_broadcast[ph], {Family::TpCollective, static_cast<Phase>(ph)});  // 2d's SUMMA steps
    }
    for (std::size_t ph = 0; ph < 3; ++ph) {
        const auto phase = static_cast<Phase>(ph);
        const auto cp = [&](std::uint32_t label, Family f, ContextOp o) { add(label, {f, phase, LayerOp::Attn, false, o}); };
        cp(l.cp_attn_step[ph], Family::ContextKernel, ContextOp::Step);
        cp(l.cp_merge[ph], Family::ContextKernel, ContextOp::Merge);
        cp(l.cp_exchange[ph], Family::ContextComm, ContextOp::Exchange);
        cp(l.cp_gather[ph], Family::ContextComm, ContextOp::Gather);
        cp(l.cp_scatter[ph], Family::ContextComm, ContextOp::ReduceScatter);
        cp(l.cp_qkv_a2a[ph], Family::ContextComm, ContextOp::QkvAllToAll);
        cp(l.cp_out_a2a[ph], Family::ContextComm, ContextOp::OutAllToAll);
    }
    for (int i = 0; i < kMoeOpCount; ++i) {
        const auto k = static_cast<std::size_t>(i);
        OpCode c{Family::MoeKernel};
        c.moe = static_cast<MoeOp>(i);
        for (std::size_t ph = 0; ph < 3; ++ph) {
            c.phase = static_cast<Phase>(ph);
            add(l.moe[ph][k], c);
        }
        c.wgrad = true;
        if (l.moe_wgrad[k] != l.moe[2][k]) add(l.moe_wgrad[k], c);
    }
    for (std::size_t ph = 0; ph < 3; ++ph) {
        const auto exchange = [&](std::uint32_t label, MoeExchange x) {
            OpCode c{Family::MoeComm, static_cast<Phase>(ph)};
            c.exchange = x;
            add(label, c);
        };
        exchange(l.moe_dispatch[ph], MoeExchange::Dispatch);
        exchange(l.moe_combine[ph], MoeExchange::Combine);
        exchange(l.moe_etp_gather[ph], MoeExchange::EtpGather);
        exchange(l.moe_etp_scatter[ph], MoeExchange::EtpScatter);
    }
    add(l.edp_allreduce, {Family::EdpReduce});
    add(l.edp_reduce_scatter, {Family::EdpReduce});
    add(l.edp_all_gather, {Family::EdpGather});
    add(l.cp_dkv_exchange, {Family::ContextComm, Phase::Backward, LayerOp::Attn, false, ContextOp::DkvExchange});
    add(l.embed_f, {Family::Embed, Phase::Forward});
    add(l.embed_b, {Family::Embed, Phase::Backward});
    add(l.embed_dropout_f, {Family::EmbedDropout, Phase::Forward});
    add(l.embed_dropout_b, {Family::EmbedDropout, Phase::Backward});
    add(l.final_ln_f, {Family::FinalLn, Phase::Forward});
    add(l.final_ln_b, {Family::FinalLn, Phase::Backward});
    add(l.logits_f, {Family::Logits, Phase::Forward});
    add(l.logits_dgrad, {Family::Logits, Phase::Backward});
    add(l.logits_wgrad, {Family::Logits, Phase::Backward, LayerOp::Count, true});
    add(l.xent_f, {Family::Xent, Phase::Forward});
    add(l.xent_b, {Family::Xent, Phase::Backward});
    add(l.xent_tp, {Family::XentReduce, Phase::Forward});
    add(l.send_act, {Family::SendAct});
    add(l.recv_act, {Family::RecvAct});
    add(l.send_grad, {Family::SendGrad});
    add(l.recv_grad, {Family::RecvGrad});
    add(l.pp_gather, {Family::PpGather});
    add(l.dp_allreduce, {Family::DpReduce});
    add(l.dp_reduce_scatter, {Family::DpReduce});
    add(l.dp_all_gather, {Family::DpGather});
    add(l.optimizer, {Family::Optimizer});
    add(l.tp_grad_sync, {Family::TpGradSync});
    add(l.emb_grad_sync, {Family::EmbGradSync});
    add(l.fsdp_gather_f, {Family::FsdpGather, Phase::Forward});
    add(l.fsdp_gather_b, {Family::FsdpGather, Phase::Backward});
    add(l.fsdp_reduce_scatter, {Family::FsdpReduceScatter});
    add(l.fsdp_replica_allreduce, {Family::FsdpReplicaReduce});
    add(l.fsdp_expert_gather_f, {Family::FsdpExpertGather, Phase::Forward});
    add(l.fsdp_expert_gather_b, {Family::FsdpExpertGather, Phase::Backward});
    add(l.fsdp_expert_reduce_scatter, {Family::FsdpExpertReduceScatter});
    add(l.fsdp_expert_replica_allreduce, {Family::FsdpExpertReplicaReduce});
    for (std::size_t k = 0; k < l.cast_f.size(); ++k)
        for (std::uint32_t label : {l.cast_f[k], l.cast_r[k], l.cast_b[k], l.transpose_b[k]})
            if (label != 0) table[scratch.labels[label]] = {Family::NumericallyInert};
    const auto rope = static_cast<std::size_t>(LayerOp::Rope);
    // Activation offloading's copies to host memory and back move the values unchanged.
    for (std::uint32_t label : {l.fwd[rope], l.rec[rope], l.bwd[rope], l.grad_norm, l.unscale, l.zero_grad,
                                l.act_offload, l.act_reload})
        table[scratch.labels[label]] = {Family::NumericallyInert};
    std::vector<OpCode> codes;
    codes.reserve(program.labels.size());
    for (const std::string& name : program.labels) {
        const auto it = table.find(name);
        codes.push_back(it == table.end() ? OpCode{} : it->second);
    }
    return codes;
}

}  // namespace cuboid::cpu
