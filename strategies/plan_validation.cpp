// validate_plan: every way a scenario's plan can be impossible, each reported at its key.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "strategies/plan_checker.hpp"

#include "sim/checked_math.hpp"

#include "hardware_models/gpu_spec.hpp"
#include "strategies/context_attention.hpp"
#include "strategies/layout.hpp"
#include "strategies/names.hpp"
#include "strategies/partition/stage_partition.hpp"
#include "strategies/schedule_kinds.hpp"
#include "strategies/tensor_modes/mode_validation.hpp"
#include "strategies/work_estimate.hpp"

namespace cuboid {
namespace {

using std::to_string;

using Checker = PlanChecker;

std::string fmt_ratio(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

void check_model(const Checker& c, const ModelSpec& m) {
    c.require(m.layers > 0, "model.layers", "must be a positive number of layers");
    c.require(m.hidden > 0, "model.hidden", "must be a positive hidden size");
    c.require(m.heads > 0, "model.heads", "must be a positive number of attention heads");
    c.require(m.seq_len > 0, "model.seq_len", "must be a positive sequence length");
    c.require(m.vocab > 0, "model.vocab", "must be a positive vocabulary size");
    // Without model.head_dim a head is hidden / heads wide, which must be whole.
    c.require(m.mla() || m.head_dim > 0 || m.hidden % m.heads == 0, "model.heads",
              "hidden " + to_string(m.hidden) + " is not a multiple of heads " + to_string(m.heads) +
                  " (or give model.head_dim)");
    const int kv = m.kv_heads_or_default();
    c.require(kv > 0 && m.heads % kv == 0, "model.kv_heads",
              "must divide heads " + to_string(m.heads) + " (got " + to_string(kv) + ")");
    c.require(m.ffn_hidden >= 0, "model.ffn_hidden", "must be positive (0: 4 * hidden)");
    c.require(m.experts >= 0, "model.experts", "must be at least 1 (or absent: a dense model)");
}

// The fused kernels of FlashAttention and cuDNN run in fp16 / bf16 (fp8 training keeps the
// attention 16-bit); the 2d, 3d and ATP layer programs model their papers' unfused attention.
void check_attention(const Checker& c, const Scenario& sc) {
    if (sc.model.attention != AttentionKernel::Fused) return;
    const sim::Precision p = sc.training.precision;
    c.require(p != sim::Precision::Fp32 && p != sim::Precision::Tf32, "model.attention",
              "fused attention kernels run in fp16 or bf16; with fp32 or tf32 training use model.attention: unfused");
    c.require(sc.parallel.tensor_mode == TensorMode::OneD || sc.parallel.tensor <= 1, "model.attention",
              "fused attention is modelled with 1d tensor parallelism; the 2d, 3d and atp layer programs run "
              "their papers' unfused attention: set model.attention: unfused (or training.framework: megatron-2021)");
}

// A recipe other than delayed scaling changes the casts Transformer Engine runs around the linear
// layers' fp8 GEMMs: it needs fp8, Transformer Engine, and the 1d layer program (the 2d, 3d and
// ATP programs price no fp8 casts).
void check_fp8_recipe(const Checker& c, const Scenario& sc) {
    if (sc.model.fp8_recipe == Fp8Recipe::Delayed) return;
    const std::string recipe = "training.fp8_recipe " + fp8_recipe_name(sc.model.fp8_recipe);
    c.require(sc.training.precision == sim::Precision::Fp8, "training.fp8_recipe",
              recipe + " scales fp8 operands: it needs training.precision: fp8 (got " +
                  precision_name(sc.training.precision) + ")");
    c.require(sc.model.transformer_engine, "training.fp8_recipe",
              recipe + " is Transformer Engine's: it needs training.transformer_engine: true (or training.framework: "
                       "megatron-core)");
    c.require(sc.parallel.tensor_mode == TensorMode::OneD || sc.parallel.tensor <= 1, "training.fp8_recipe",
              recipe + " is modelled with 1d tensor parallelism; the 2d, 3d and atp layer programs price no fp8 casts");
}

void check_unsupported(const Checker& c, const ParallelPlan& p) {
    c.require(p.zero_stage >= 0 && p.zero_stage <= 3, "parallel.zero_stage", "allowed: 0, 1, 2, 3");
    c.require(p.shard_group >= 0, "parallel.shard_group", "must be at least 1 (or absent: all data-parallel ranks)");
}

int check_degrees(const Checker& c, const Scenario& sc) {
    const ParallelPlan& p = sc.parallel;
    // 64-bit products: a wrapped one could pass as a small valid cluster or degree.
    const std::int64_t gpus = sc.cluster.gpus();
    c.require(gpus > 0, "cluster.nodes", "the cluster has no GPUs");
    c.require(gpus <= hw::kMaxClusterGpus, "cluster.nodes",
              "nodes " + to_string(sc.cluster.nodes) + " x gpus_per_node " + to_string(sc.cluster.gpus_per_node) +
                  " = " + to_string(gpus) + " GPUs; cuboid models at most " + to_string(hw::kMaxClusterGpus) + " GPUs");
    c.require(p.tensor >= 1, "parallel.tensor", "must be at least 1");
    c.require(p.pipeline >= 1, "parallel.pipeline", "must be at least 1");
    c.require(p.data >= 0, "parallel.data", "must be at least 1 (or absent: derived)");
    c.require(p.context >= 1, "parallel.context", "must be at least 1");
    // Each factor >= 1 and below 2^31: the product of three fits in 64 bits.
    const std::int64_t tp = std::int64_t{p.tensor} * p.pipeline * p.context;
    const std::string named = p.context > 1 ? "tensor*context*pipeline" : "tensor*pipeline";
    if (p.data == 0) {
        c.require(gpus % tp == 0, p.context > 1 ? "parallel.context" : "parallel.pipeline",
                  named + " = " + to_string(tp) + " does not divide the " + to_string(gpus) + " GPUs");
        return static_cast<int>(gpus / tp);
    }
    const std::optional<std::int64_t> total = sim::checked_mul(tp, std::int64_t{p.data});
    c.require(total && *total == gpus, "parallel.data",
              named + "*data = " + (total ? to_string(*total) : "more than 2^63") + " but the cluster has " +
                  to_string(gpus) + " GPUs");
    return p.data;
}

// A GPU's rack-scale system (GB200 NVL72) gives the domain when the scenario does not: then the
// error stands at cluster.gpu, which brought the domain, and says what to write instead.
void check_scale_up_domain(const Checker& c, const Scenario& sc) {
    const std::optional<std::string> problem = hw::scale_up_domain_problem(sc.cluster);
    if (!problem) return;
    const auto& system = sc.cluster_choices.system;
    if (sc.cluster_choices.scale_up_domain || !system) c.require(false, "cluster.scale_up_domain", *problem);
    InputLocation at_gpu = sc.where("cluster.gpu");
    at_gpu.key = "cluster.scale_up_domain";
    throw InputError(at_gpu, *problem + "; " + to_string(system->scale_up_domain) + " is the NVLink domain of " +
                                 system->name + " (cluster.gpu " + sc.cluster.gpu +
                                 "): set cluster.scale_up_domain to the GPUs of the NVLink domain the job's nodes share");
}

void check_tensor(const Checker& c, const Scenario& sc) {
    const int t = sc.parallel.tensor;
    const int gpn = sc.cluster.gpus_per_node;
    const int domain = sc.cluster.domain_gpus();
    const ModelSpec& m = sc.model;
    // A tensor group must tile nodes: whole groups inside a node, or whole nodes per group.
    c.require(gpn % t == 0 || t % gpn == 0, "parallel.tensor",
              "tensor " + to_string(t) + " must divide gpus_per_node " + to_string(gpn) + " or be a multiple of it");
    // ... and NVLink domains: the tensor group is innermost in the rank order, so a size that
    // divides the domain keeps every group on NVLink (Megatron's placement).
    c.require(domain % t == 0 || t % domain == 0, "parallel.tensor",
              "tensor " + to_string(t) + " must divide cluster.scale_up_domain " + to_string(domain) +
                  " or be a multiple of it, so that no tensor group straddles two NVLink domains");
    // Megatron's 1d splits heads and MLP columns t ways; the other modes check their mesh's
    // splits (strategies/tensor_modes/mode_validation.cpp).
    const bool one_d = sc.parallel.tensor_mode == TensorMode::OneD;
    // The 2d, 3d and ATP layer programs split Q and the attention output as the hidden size.
    c.require(one_d || t <= 1 || !m.attention_width_differs(), "model.head_dim",
              "heads x head_dim = " + to_string(static_cast<long long>(m.heads) * m.head_dim) +
                  " differs from the hidden size " + to_string(m.hidden) +
                  ", which only 1d tensor parallelism models (got tensor_mode " + to_string(sc.parallel.tensor_mode) + ")");
    c.require(!one_d || m.heads % t == 0, "parallel.tensor",
              "must divide the " + to_string(m.heads) + " attention heads");
    c.require(!one_d || m.kv_heads_or_default() % t == 0, "parallel.tensor",
              "must divide the " + to_string(m.kv_heads_or_default()) + " key/value heads");
    c.require(!one_d || m.ffn_or_default() % t == 0, "parallel.tensor",
              "must divide the MLP size " + to_string(m.ffn_or_default()));
    if (sc.parallel.sequence_parallel)
        c.require(m.seq_len % t == 0, "parallel.sequence_parallel",
                  "sequence parallelism needs seq_len " + to_string(m.seq_len) + " divisible by tensor " + to_string(t));
    // Sub-pipelined tensor parallelism (Merak) cuts each micro-batch into k equal sub-batches of
    // whole sequences (k | micro_batch, Merak's cut along the batch) or of s/k positions of every
    // sequence (k | seq_len), so every sub-batch runs the same GEMM shapes.
    const int k = sc.parallel.overlap_chunks, b = sc.training.micro_batch;
    c.require(k >= 1, "parallel.overlap_chunks", "must be at least 1");
    c.require(b % k == 0 || m.seq_len % k == 0, "parallel.overlap_chunks",
              "the " + to_string(k) + " sub-batches must split the micro-batch's tokens evenly: k must divide micro_batch " +
                  to_string(b) + " or seq_len " + to_string(m.seq_len));
}

// Context parallelism as Megatron-Core runs it (Transformer Engine's fused attention with
// context parallelism): each rank holds chunks i and 2c-1-i of the 2c chunks of every sequence,
// so causal attention costs every rank the same (strategies/context_attention.hpp).
void check_context(const Checker& c, const Scenario& sc) {
    const ParallelPlan& p = sc.parallel;
    if (p.context <= 1) return;
    const std::string cp = to_string(p.context);
    c.require(sc.model.seq_len % (2 * p.context) == 0, "parallel.context",
              "context parallelism splits every sequence into 2*context = " + to_string(2 * p.context) +
                  " chunks; seq_len " + to_string(sc.model.seq_len) + " is not a multiple of it");
    c.require(sc.model.attention == AttentionKernel::Fused, "parallel.context",
              "context parallelism runs inside the fused attention kernel (Transformer Engine); set model.attention: "
              "fused (or training.framework: megatron-core)");
    c.require(p.tensor_mode == TensorMode::OneD, "parallel.context",
              "context parallelism is modelled with 1d tensor parallelism (got tensor_mode " + to_string(p.tensor_mode) + ")");
    c.require(p.overlap_chunks == 1, "parallel.context",
              "context parallelism already splits the sequence; it is not combined with overlap_chunks > 1");
    if (const auto mode_check = context_mode_kind(p.context_mode).check) mode_check(c, sc);
    const int sg = p.shard_group;
    c.require(sg == 0 || sg % p.context == 0, "parallel.shard_group",
              to_string(sg) + " must be a multiple of context " + cp + ": a shard group holds whole context groups");
}

// Multi-head latent attention as Megatron-Core's MLASelfAttention builds it (mla_layer.hpp):
// DeepSeek's layer (RMSNorm, SwiGLU, no biases), heads split over t under 1d tensor parallelism.
void check_latent_attention(const Checker& c, const Scenario& sc) {
    const ModelSpec& m = sc.model;
    constexpr std::array<const char*, 5> keys = {"model.q_lora_rank", "model.kv_lora_rank", "model.qk_nope_head_dim",
                                                 "model.qk_rope_head_dim", "model.v_head_dim"};
    if (!m.mla()) {
        for (const char* key : keys)
            c.require(!sc.key_lines.contains(key), key, "needs multi-head latent attention: set model.attention_kind: mla");
        return;
    }
    const std::array<int, 5> values = {m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim};
    for (std::size_t i = 0; i < keys.size(); ++i)
        c.require(values[i] >= 1, keys[i],
                  "multi-head latent attention needs it (DeepSeek-V3: q_lora_rank 1536, kv_lora_rank 512, "
                  "qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128); got " + to_string(values[i]));
    c.require(!sc.key_lines.contains("model.kv_heads") || m.kv_heads == m.heads, "model.kv_heads",
              "multi-head latent attention gives every head its own keys and values: kv_heads must equal heads " +
                  to_string(m.heads) + " (or be left out); got " + to_string(m.kv_heads));
    c.require(!sc.key_lines.contains("model.head_dim"), "model.head_dim",
              "has no meaning under multi-head latent attention: a head's widths are model.qk_nope_head_dim, "
              "qk_rope_head_dim (queries and keys) and v_head_dim (values)");
    c.require(m.swiglu, "model.swiglu",
              "multi-head latent attention is modelled in DeepSeek's layer: RMSNorm, SwiGLU MLP, no biases; set "
              "model.swiglu: true");
    const int t = sc.parallel.tensor;
    c.require(t <= 1 || sc.parallel.tensor_mode == TensorMode::OneD, "parallel.tensor_mode",
              "multi-head latent attention is modelled under 1d tensor parallelism (heads split over t); got " +
                  to_string(sc.parallel.tensor_mode));
    c.require(sc.parallel.context <= 1, "parallel.context",
              "context parallelism with multi-head latent attention is not modelled (its K/V exchange of latent "
              "heads); allowed: 1");
}

// Activation offloading as Megatron-Core allows it (TransformerConfig's checks): fewer layers than
// the model has, no pipeline parallelism, no recomputation.
void check_activation_offload(const Checker& c, const Scenario& sc) {
    const int n = sc.training.activation_offload_layers;
    if (n == 0) return;
    const std::string key = "training.activation_offload_layers";
    c.require(n < sc.model.layers, key,
              "must be below the model's " + to_string(sc.model.layers) + " layers (got " + to_string(n) + ")");
    c.require(sc.parallel.pipeline == 1, key,
              "activation offloading runs without pipeline parallelism (Megatron-Core); needs parallel.pipeline: 1");
    c.require(sc.parallel.recompute == Recompute::None, key,
              "activation offloading runs without recomputation (Megatron-Core); needs parallel.recompute: none");
    c.require(!splits_backward(sc.parallel.schedule), key,
              to_string(sc.parallel.schedule) + " splits the backward, which is not modelled with activation offloading");
}

// Megatron-Core's recompute_modules: a choice of selective recomputation; mla_up_proj of the
// latent attention's Q, K and V, which the fused attention kernel keeps (the unfused core keeps
// them as its GEMMs' operands, not modelled with it); layernorm where some norm is a module of its
// own (LayerDims::separate_norm1/2: Transformer Engine fuses the others into the next GEMM, and
// Megatron-Core then has nothing to recompute); moe_act and moe in a mixture-of-experts model,
// shared_experts in one with shared experts; mlp in a dense layer whose norm Transformer Engine
// fuses into FC1. The modules' tensors are modelled in the 1d layer program (2d, 3d and atp keep
// their own activations).
void check_recompute_modules(const Checker& c, const Scenario& sc) {
    const std::string key = "parallel.recompute_modules";
    const ParallelPlan::RecomputeModules& m = sc.parallel.recompute_modules;
    if (!sc.key_lines.contains(key) && m.is_default()) return;
    c.require(sc.parallel.recompute == Recompute::Selective, key,
              "chooses what selective recomputation runs again; needs parallel.recompute: selective (got " +
                  to_string(sc.parallel.recompute) + ")");
    if (m.layernorm || m.moe_act || m.mlp || m.moe || m.shared_experts) {
        c.require(sc.parallel.tensor_mode == TensorMode::OneD, key,
                  "layernorm, moe_act, mlp, moe and shared_experts are modelled with 1d tensor parallelism "
                  "(parallel.tensor_mode: 1d)");
    }
    if (m.mlp) {
        c.require(!sc.model.moe() || sc.model.dense_layers > 0, key,
                  "mlp recomputes the dense MLP: every layer of this model has experts (a mixture-of-experts "
                  "layer's MLP is the moe module)");
        c.require(sc.model.transformer_engine, key,
                  "mlp is modelled with the norm fused into FC1 by Transformer Engine (training.transformer_engine: "
                  "true); without it the checkpoint would start after the norm");
    }
    if (m.layernorm) {
        c.require(sc.model.has_norm_modules(), key,
                  "layernorm has nothing to recompute here: Transformer Engine fuses both norms of every layer "
                  "into the GEMM after them (only latent attention's input norm, a router's norm, or the norms "
                  "without training.transformer_engine are modules of their own)");
    }
    if (m.moe_act) {
        c.require(sc.model.moe(), key, "moe_act recomputes the experts' activation: it needs a mixture-of-experts "
                                       "model (model.experts)");
    }
    if (m.moe) {
        c.require(sc.model.moe(), key, "moe recomputes a mixture-of-experts layer's MLP: it needs a mixture-of-experts "
                                       "model (model.experts; a dense layer's MLP is the mlp module)");
    }
    if (m.shared_experts) {
        c.require(sc.model.moe() && sc.model.shared_experts > 0, key,
                  "shared_experts recomputes the shared experts' MLP: it needs a mixture-of-experts model with shared "
                  "experts (model.experts and model.shared_experts)");
    }
    if (!m.mla_up_proj) return;
    c.require(sc.model.mla(), key, "mla_up_proj needs multi-head latent attention: set model.attention_kind: mla");
    c.require(sc.model.attention == AttentionKernel::Fused, key,
              "mla_up_proj is modelled with the fused attention kernel, which keeps Q, K and V (model.attention: "
              "fused)");
}

// Multi-token prediction (ModelSpec::mtp_layers) as modelled: on the last stage of a pipeline
// without tensor parallelism (the projection's split and collectives are not modelled).
void check_multi_token_prediction(const Checker& c, const Scenario& sc) {
    const ModelSpec& m = sc.model;
    const ParallelPlan& p = sc.parallel;
    c.require(m.mtp_layers >= 0, "model.mtp_layers", "must be at least 0");
    if (m.mtp_layers == 0) return;
    c.require(p.tensor == 1, "parallel.tensor",
              "multi-token prediction (model.mtp_layers) is modelled without tensor parallelism (its projection's "
              "split is not); allowed: 1");
    c.require(p.zero_stage != 3, "parallel.zero_stage",
              "multi-token prediction with ZeRO-3 is not modelled (its modules as units to gather); allowed: 0, 1, 2");
    c.require(!splits_backward(p.schedule), "parallel.schedule",
              to_string(p.schedule) + " splits the backward, which is not modelled with multi-token prediction");
    c.require(p.overlap_chunks <= 1, "parallel.overlap_chunks",
              "multi-token prediction runs whole micro-batches; allowed: 1");
}

// Mixture of experts with expert parallelism as Megatron-Core runs it (its alltoall token
// dispatcher): the expert layers regroup the t*c*d ranks of a stage as etp x ep x expert-data.
void check_experts(const Checker& c, const Scenario& sc, int replicas) {
    const ModelSpec& m = sc.model;
    const ParallelPlan& p = sc.parallel;
    c.require(p.expert >= 1, "parallel.expert", "must be at least 1");
    c.require(p.expert_tensor >= 1, "parallel.expert_tensor", "must be at least 1");
    if (!m.moe()) {
        c.require(p.expert == 1, "parallel.expert", "expert parallelism needs a mixture-of-experts model (model.experts)");
        c.require(p.expert_tensor == 1, "parallel.expert_tensor",
                  "expert tensor parallelism needs a mixture-of-experts model (model.experts)");
        for (const char* key : {"model.experts_per_token", "model.expert_ffn_hidden", "model.shared_experts",
                                "model.dense_layers", "model.moe_load_imbalance"})
            c.require(!sc.key_lines.contains(key), key, "needs a mixture-of-experts model: set model.experts");
        return;
    }
    const std::string e = to_string(m.experts);
    c.require(m.top_k() <= m.experts, "model.experts_per_token",
              "must be at most the " + e + " experts (got " + to_string(m.top_k()) + ")");
    c.require(m.dense_layers < m.layers, "model.dense_layers",
              "must leave at least one of the " + to_string(m.layers) + " layers to the experts (got " +
                  to_string(m.dense_layers) + ")");
    c.require(m.moe_load_imbalance >= 1.0 && m.moe_load_imbalance <= static_cast<double>(m.experts) / m.top_k(),
              "model.moe_load_imbalance",
              "the busiest expert's tokens over the mean: between 1 (balanced) and experts / experts_per_token = " +
                  fmt_ratio(static_cast<double>(m.experts) / m.top_k()));
    const int ep = p.expert, etp = p.expert_tensor, t = p.tensor;
    c.require(m.experts % ep == 0, "parallel.expert", "must divide the " + e + " experts (got " + to_string(ep) + ")");
    const std::int64_t ranks = std::int64_t{t} * replicas;
    const std::string named = p.context > 1 ? "tensor*context*data" : "tensor*data";
    c.require(ranks % (std::int64_t{ep} * etp) == 0, etp > 1 ? "parallel.expert_tensor" : "parallel.expert",
              "expert*expert_tensor = " + to_string(ep * etp) + " must divide " + named + " = " + to_string(ranks) +
                  ": the expert layers regroup a stage's ranks as expert_tensor x expert x expert-data");
    c.require(m.expert_ffn_or_default() % etp == 0, "parallel.expert_tensor",
              "must divide the expert MLP size " + to_string(m.expert_ffn_or_default()));
    const int shared = m.shared_experts * m.expert_ffn_or_default();
    c.require(shared % t == 0, "parallel.tensor", "must divide the shared experts' MLP size " + to_string(shared));
    c.require(t == 1 || p.sequence_parallel, "parallel.sequence_parallel",
              "Megatron-Core runs mixture-of-experts layers with tensor parallelism only under sequence parallelism "
              "(each tensor rank routes its own tokens): set parallel.sequence_parallel: true");
    c.require(p.tensor_mode == TensorMode::OneD, "parallel.tensor_mode",
              "mixture-of-experts layers are modelled with 1d tensor parallelism (got " + to_string(p.tensor_mode) + ")");
    c.require(p.overlap_chunks == 1, "parallel.overlap_chunks",
              "sub-batches (overlap_chunks > 1) are not modelled for mixture-of-experts layers");
    // ZeRO-3 shards the routed experts over the expert-data group (experts_fully_sharded); under
    // hybrid sharding over the expert-data ranks among one shard group's tensor x shard_group
    // ranks (Layout::expert_shard_size), which must then hold whole expert groups and at least
    // two copies of each expert (one copy would leave nothing to shard: the expert would be
    // replicated in every shard group, which is not modelled).
    const int sg = p.shard_group;
    if (p.zero_stage == 3 && sg > 0 && sg < replicas && replicas % sg == 0) {
        const std::int64_t instance = std::int64_t{t} * sg;
        const std::string shard_ranks = "tensor*shard_group = " + to_string(instance);
        c.require(instance % (std::int64_t{ep} * etp) == 0, "parallel.shard_group",
                  "expert*expert_tensor = " + to_string(ep * etp) + " must divide " + shard_ranks +
                      ": hybrid sharding shards each routed expert over the expert-data ranks of one shard group");
        c.require(instance >= 2 * std::int64_t{ep} * etp, "parallel.shard_group",
                  shard_ranks + " holds one copy of each routed expert (expert*expert_tensor = " + to_string(ep * etp) +
                      "): hybrid sharding of the experts needs at least two, so shard_group must be at least " +
                      to_string((2 * ep * etp + t - 1) / t));
    }
}

void check_pipeline(const Checker& c, const Scenario& sc, int micro_batches) {
    const ParallelPlan& p = sc.parallel;
    c.require(p.virtual_stages >= 1, "parallel.virtual_stages", "must be at least 1");
    schedule_kind(p.schedule).check(c, sc, micro_batches);
    if (splits_backward(p.schedule))
        c.require(p.tensor_mode == TensorMode::OneD || p.tensor <= 1, "parallel.tensor_mode",
                  to_string(p.schedule) + " splits each layer's backward into input- and weight-gradient passes, "
                  "which the 1d layer program models; got tensor_mode " + to_string(p.tensor_mode));
    const std::int64_t chunks = std::int64_t{p.pipeline} * p.virtual_stages;
    c.require(sc.model.layers >= chunks, "parallel.pipeline",
              "pipeline*virtual_stages = " + to_string(chunks) + " exceeds the " +
                  to_string(sc.model.layers) + " layers (each chunk needs a layer)");
}

// The layout of a valid plan; `builtin`: the built-in catalog when loaded (else the partitioner
// loads it when it needs it).
Layout validated(const Scenario& sc, const hw::Catalog* builtin) {
    const Checker c(sc);
    check_model(c, sc.model);
    check_unsupported(c, sc.parallel);
    check_attention(c, sc);
    check_fp8_recipe(c, sc);
    // Megatron's fp16 path keeps fp16 gradients with an fp32 copy, fp32 training fp32 ones: the
    // choice is that of bf16 (and fp8) training's main gradients.
    const sim::Precision p = sc.training.precision;
    c.require(!sc.training.grad_precision || p == sim::Precision::Bf16 || p == sim::Precision::Fp8,
              "training.grad_precision",
              "chooses the gradients of bf16 or fp8 training (got training.precision " + precision_name(p) + ")");
    c.require(!sc.training.optimizer_offload || sc.parallel.zero_stage >= 1, "training.optimizer_offload",
              "needs the distributed optimizer (parallel.zero_stage >= 1), as Megatron-Core's CPU offload does");
    c.require(!sc.training.optimizer_offload || sc.cluster.host_memory_gb_per_s.has_value(),
              "cluster.host_memory_gb_per_s",
              "missing: training.optimizer_offload runs Adam over host memory; give the node's host memory bandwidth "
              "in GB/s (as a STREAM copy achieves it)");
    check_activation_offload(c, sc);
    check_recompute_modules(c, sc);
    const int data = check_degrees(c, sc);
    check_scale_up_domain(c, sc);
    // The replicas of the weights in a stage: data x context (the gradient reduction's group).
    const int replicas = data * sc.parallel.context;
    const int sg = sc.parallel.shard_group;
    const std::string replicas_named = sc.parallel.context > 1 ? "data*context " : "the data-parallel degree ";
    c.require(sg == 0 || replicas % sg == 0, "parallel.shard_group",
              to_string(sg) + " must divide " + replicas_named + to_string(replicas));
    c.require(sg == 0 || sg == replicas || sc.parallel.zero_stage == 3, "parallel.shard_group",
              "hybrid sharding (a shard group smaller than " + replicas_named + to_string(replicas) +
                  ") shards the weights: it needs parallel.zero_stage: 3");
    check_context(c, sc);
    check_tensor(c, sc);
    check_latent_attention(c, sc);
    check_multi_token_prediction(c, sc);
    check_experts(c, sc, replicas);
    const TensorMesh mesh = check_tensor_mode(sc, builtin);
    const TrainingSpec& tr = sc.training;
    c.require(tr.micro_batch >= 1, "training.micro_batch", "must be at least 1");
    // A GEMM's rows are a micro-batch's tokens, and an attention GEMM's batch its sequences times
    // heads; an op stores them in 32 bits (sim::PackedGemmShape).
    constexpr std::int64_t kLargestDimension = std::numeric_limits<std::int32_t>::max();
    const std::int64_t tokens = std::int64_t{tr.micro_batch} * sc.model.seq_len;
    c.require(tokens <= kLargestDimension, "training.micro_batch",
              "micro_batch x seq_len = " + to_string(tokens) + " tokens exceeds " + to_string(kLargestDimension) +
                  ", the largest GEMM dimension cuboid models");
    const std::int64_t products = std::int64_t{tr.micro_batch} * sc.model.heads;
    c.require(products <= kLargestDimension, "training.micro_batch",
              "micro_batch x heads = " + to_string(products) + " attention products exceeds " +
                  to_string(kLargestDimension) + ", the largest GEMM batch cuboid models");
    c.require(tr.global_batch >= 1, "training.global_batch", "must be at least 1");
    const std::int64_t per_step = std::int64_t{tr.micro_batch} * data;  // both below 2^31: fits
    c.require(tr.global_batch % per_step == 0, "training.global_batch",
              "must be a multiple of micro_batch*data = " + to_string(per_step));
    const auto m = static_cast<int>(tr.global_batch / per_step);
    check_pipeline(c, sc, m);
    // Before the partition and the program are built: both grow with the plan's size.
    check_work(sc, replicas, m);

    Layout l;
    l.tensor = sc.parallel.tensor;
    l.pipeline = sc.parallel.pipeline;
    l.data = replicas;
    l.context = sc.parallel.context;
    l.context_mode = sc.parallel.context_mode;
    l.experts = sc.model.moe();
    l.expert = sc.parallel.expert;
    l.expert_tensor = sc.parallel.expert_tensor;
    l.data_shard = sc.parallel.shard_group == replicas ? 0 : sc.parallel.shard_group;
    l.virtual_stages = sc.parallel.virtual_stages;
    l.v_shape = schedule_kind(sc.parallel.schedule).v_shape;
    l.tensor_mesh = mesh.axes;
    l.tensor_order = mesh.order;
    l.micro_batches = m;
    l.chunk_layers = stage_partition(sc, l, builtin);
    return l;
}

}  // namespace

Layout validate_plan(const Scenario& sc) { return validated(sc, nullptr); }

Layout validate_plan(const Scenario& sc, const hw::Catalog& builtin) { return validated(sc, &builtin); }

void check_gpu_features(const Scenario& sc, const hw::GpuSpec& gpu) {
    // MXFP8's block scales are applied by the tensor cores of Blackwell (NVIDIA) and CDNA4 (AMD);
    // earlier GPUs have no block-scaled fp8 instructions.
    if (sc.model.fp8_recipe != Fp8Recipe::Mxfp8 || sc.training.precision != sim::Precision::Fp8) return;
    const bool block_scaled = gpu.architecture == "blackwell" || gpu.architecture == "cdna4";
    Checker(sc).require(block_scaled, "training.fp8_recipe",
                        "mxfp8 needs tensor cores with block-scaled fp8 (Blackwell, CDNA4); " + gpu.name + " is " +
                            (gpu.architecture.empty() ? std::string("of no stated architecture") : gpu.architecture) +
                            ": use delayed or current");
}

}  // namespace cuboid
