#include "strategies/labels.hpp"

#include <string>

namespace cuboid {
namespace {

constexpr std::array<const char*, kLayerOpCount> kNames = {
    "ln1", "qkv", "qk", "softmax", "attn_dropout", "av", "proj", "bda1", "ln2", "fc1", "act", "fc2", "bda2", "attn", "rope"};

bool is_layer_gemm(int i) {
    const auto op = static_cast<LayerOp>(i);
    return op == LayerOp::Qkv || op == LayerOp::Qk || op == LayerOp::Av || op == LayerOp::Proj ||
           op == LayerOp::Fc1 || op == LayerOp::Fc2;
}

void intern_layer_op(sim::Program& p, Labels& l, int i) {
    const std::string n = kNames[static_cast<std::size_t>(i)];
    const auto k = static_cast<std::size_t>(i);
    l.fwd[k] = p.intern("F." + n);
    l.rec[k] = p.intern("R." + n);
    l.bwd[k] = p.intern(is_layer_gemm(i) ? "B." + n + ".dgrad" : "B." + n);
    l.wgrad[k] = is_layer_gemm(i) ? p.intern("B." + n + ".wgrad") : l.bwd[k];
}

}  // namespace

Labels intern_labels(sim::Program& p) {
    Labels l;
    for (int i = 0; i < static_cast<int>(LayerOp::Attn); ++i) intern_layer_op(p, l, i);
    const std::array<const char*, 3> phase = {"F", "R", "B"};
    const std::array<const char*, 3> coll = {"allreduce", "allgather", "reducescatter"};
    for (std::size_t ph = 0; ph < 3; ++ph)
        for (std::size_t c = 0; c < 3; ++c) l.tp[ph][c] = p.intern(std::string(phase[ph]) + ".tp." + coll[c]);
    l.embed_f = p.intern("F.embed");
    l.embed_dropout_f = p.intern("F.embed_dropout");
    l.embed_b = p.intern("B.embed");
    l.embed_dropout_b = p.intern("B.embed_dropout");
    l.final_ln_f = p.intern("F.final_ln");
    l.logits_f = p.intern("F.logits");
    l.xent_f = p.intern("F.xent");
    l.xent_tp = p.intern("F.xent.tp.allreduce");
    l.final_ln_b = p.intern("B.final_ln");
    l.logits_dgrad = p.intern("B.logits.dgrad");
    l.logits_wgrad = p.intern("B.logits.wgrad");
    l.xent_b = p.intern("B.xent");
    l.send_act = p.intern("pp.send_act");
    l.recv_act = p.intern("pp.recv_act");
    l.send_grad = p.intern("pp.send_grad");
    l.recv_grad = p.intern("pp.recv_grad");
    l.pp_gather = p.intern("pp.allgather");
    l.dp_allreduce = p.intern("dp.allreduce");
    l.dp_reduce_scatter = p.intern("dp.reducescatter");
    l.dp_all_gather = p.intern("dp.allgather");
    l.optimizer = p.intern("optimizer");
    l.group_tp = p.intern("tp");
    l.group_dp = p.intern("dp");
    l.group_pp_act = p.intern("pp.act");
    l.group_pp_grad = p.intern("pp.grad");
    // Last, so that the indices of the labels above do not depend on it.
    for (std::size_t ph = 0; ph < 3; ++ph) l.tp_broadcast[ph] = p.intern(std::string(phase[ph]) + ".tp.broadcast");
    l.tp_grad_sync = p.intern("tp.grad_allreduce");
    l.emb_grad_sync = p.intern("emb.grad_allreduce");
    l.group_emb = p.intern("emb");
    intern_layer_op(p, l, static_cast<int>(LayerOp::Attn));
    intern_layer_op(p, l, static_cast<int>(LayerOp::Rope));
    for (LayerOp op : {LayerOp::Qkv, LayerOp::Proj, LayerOp::Fc1, LayerOp::Fc2}) {
        const auto k = static_cast<std::size_t>(op);
        const std::string n = kNames[k];
        l.cast_f[k] = p.intern("F." + n + ".cast");
        l.cast_r[k] = p.intern("R." + n + ".cast");
        l.cast_b[k] = p.intern("B." + n + ".cast");
        l.transpose_b[k] = p.intern("B." + n + ".transpose");
    }
    l.grad_norm = p.intern("optimizer.grad_norm");
    l.unscale = p.intern("optimizer.unscale");
    l.zero_grad = p.intern("optimizer.zero_grad");
    l.fsdp_gather_f = p.intern("F.fsdp.allgather");
    l.fsdp_gather_b = p.intern("B.fsdp.allgather");
    l.fsdp_reduce_scatter = p.intern("B.fsdp.reducescatter");
    l.fsdp_replica_allreduce = p.intern("fsdp.replica_allreduce");
    l.group_shard = p.intern("dp.shard");
    l.group_replica = p.intern("dp.replica");
    for (std::size_t ph = 0; ph < 3; ++ph) {
        const std::string f = phase[ph];
        l.cp_exchange[ph] = p.intern(f + ".cp.exchange");
        l.cp_attn_step[ph] = p.intern(f + ".attn.step");
        l.cp_merge[ph] = p.intern(f + ".attn.merge");
        l.cp_gather[ph] = p.intern(f + ".cp.allgather");
        l.cp_scatter[ph] = p.intern(f + ".cp.reducescatter");
        l.cp_qkv_a2a[ph] = p.intern(f + ".cp.alltoall_qkv");
        l.cp_out_a2a[ph] = p.intern(f + ".cp.alltoall_out");
    }
    l.cp_dkv_exchange = p.intern("B.cp.dkv_exchange");
    l.group_cp = p.intern("cp");
    constexpr std::array<const char*, kMoeOpCount> moe = {"router", "router_topk", "permute", "expert_fc1", "expert_act",
                                                          "expert_fc2", "unpermute", "shared_fc1", "shared_act", "shared_fc2"};
    const auto gemm = [](std::size_t i) {
        const auto op = static_cast<MoeOp>(i);
        return op == MoeOp::Router || op == MoeOp::ExpertFc1 || op == MoeOp::ExpertFc2 || op == MoeOp::SharedFc1 ||
               op == MoeOp::SharedFc2;
    };
    for (std::size_t i = 0; i < moe.size(); ++i) {
        const std::string n = std::string("moe.") + moe[i];
        l.moe[0][i] = p.intern("F." + n);
        l.moe[1][i] = p.intern("R." + n);
        l.moe[2][i] = p.intern(gemm(i) ? "B." + n + ".dgrad" : "B." + n);
        l.moe_wgrad[i] = gemm(i) ? p.intern("B." + n + ".wgrad") : l.moe[2][i];
    }
    for (std::size_t ph = 0; ph < 3; ++ph) {
        const std::string f = phase[ph];
        l.moe_dispatch[ph] = p.intern(f + ".ep.alltoall_dispatch");
        l.moe_combine[ph] = p.intern(f + ".ep.alltoall_combine");
        l.moe_etp_gather[ph] = p.intern(f + ".etp.allgather");
        l.moe_etp_scatter[ph] = p.intern(f + ".etp.reducescatter");
    }
    l.edp_allreduce = p.intern("edp.allreduce");
    l.edp_reduce_scatter = p.intern("edp.reducescatter");
    l.edp_all_gather = p.intern("edp.allgather");
    l.group_ep = p.intern("ep");
    l.group_etp = p.intern("etp");
    l.group_edp = p.intern("edp");
    constexpr std::array<const char*, kMlaOpCount> mla = {"q_down", "kv_down", "latent_norm", "q_up", "kv_up"};
    for (std::size_t i = 0; i < mla.size(); ++i) {
        const std::string n = std::string("mla.") + mla[i];
        const bool gemm = static_cast<MlaOp>(i) != MlaOp::LatentNorm;
        l.mla[0][i] = p.intern("F." + n);
        l.mla[1][i] = p.intern("R." + n);
        l.mla[2][i] = p.intern(gemm ? "B." + n + ".dgrad" : "B." + n);
        l.mla_wgrad[i] = gemm ? p.intern("B." + n + ".wgrad") : l.mla[2][i];
    }
    l.mtp_embed_f = p.intern("F.mtp.embed");
    l.mtp_norm_f = p.intern("F.mtp.norms");
    l.mtp_proj_f = p.intern("F.mtp.proj");
    l.mtp_embed_b = p.intern("B.mtp.embed");
    l.mtp_norm_b = p.intern("B.mtp.norms");
    l.mtp_proj_dgrad = p.intern("B.mtp.proj.dgrad");
    l.mtp_proj_wgrad = p.intern("B.mtp.proj.wgrad");
    l.offload_d2h = p.intern("offload.grads_to_host");
    l.optimizer_host = p.intern("optimizer.host");
    l.offload_h2d = p.intern("offload.weights_to_device");
    l.fsdp_expert_gather_f = p.intern("F.fsdp.expert_allgather");
    l.fsdp_expert_gather_b = p.intern("B.fsdp.expert_allgather");
    l.fsdp_expert_reduce_scatter = p.intern("B.fsdp.expert_reducescatter");
    l.act_offload = p.intern("F.offload.activations");
    l.act_reload = p.intern("B.reload.activations");
    l.fsdp_expert_replica_allreduce = p.intern("fsdp.expert_replica_allreduce");
    l.group_expert_shard = p.intern("edp.shard");
    l.group_expert_replica = p.intern("edp.replica");
    return l;
}

}  // namespace cuboid
