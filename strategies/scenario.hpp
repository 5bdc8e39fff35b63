// A scenario as a value: model, cluster, training settings, parallel plan, cost. The YAML loader
// (strategies/cli/scenario_loader.*) fills it and records where each key came from.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hardware_models/cluster_spec.hpp"
#include "hardware_models/errors.hpp"
#include "sim/program.hpp"
#include "strategies/goodput.hpp"
#include "strategies/work_limits.hpp"

namespace cuboid {

// How the attention core runs: one fused kernel per direction (FlashAttention, cuDNN fused
// attention: no s x s scores in memory) or Megatron-LM 2021's batched GEMMs with softmax and
// dropout kernels between them.
enum class AttentionKernel : std::uint8_t { Unfused, Fused };

// How Transformer Engine scales the fp8 operands of the linear layers (its recipes):
// Delayed: one per-tensor scale from the amax history (DelayedScaling), the amax reduced in the
// cast kernel itself. Current: one per-tensor scale from the tensor's own amax (Float8CurrentScaling),
// found by a pass before the cast. Mxfp8: an E8M0 scale per block of 32 elements
// (MXFP8BlockScaling, Blackwell and CDNA4 tensor cores), each orientation quantized from the
// 16-bit tensor.
enum class Fp8Recipe : std::uint8_t { Delayed, Current, Mxfp8 };

// How the attention projects queries, keys and values: multi-head (grouped-query with
// kv_heads < heads), or DeepSeek's multi-head latent attention (strategies/mla_layer.hpp): Q and
// K/V projected down to low-rank latents, normalised, and up again per head.
enum class AttentionKind : std::uint8_t { Mha, Mla };

// What model.hf_config read from a Hugging Face config.json (strategies/cli/hf_config.hpp), so
// that the report and the JSON can show where the model's shape came from.
struct ModelImport {
    std::string path;          // the config file, as resolved
    std::string model_type;    // the config's "model_type" ("llama", "gpt2", ...)
    std::string architecture;  // its first "architectures" entry, when given
    std::vector<std::pair<std::string, std::string>> fields_read;  // config field -> scenario key
    std::vector<std::string> notes;  // fields read whose effect cuboid only approximates
    // The config's other fields, not read: no model key takes them (rope_theta, token ids, ...).
    std::vector<std::string> fields_not_read;
};

struct ModelSpec {
    std::string preset;     // empty: none
    std::optional<ModelImport> imported;  // set by model.hf_config; a preset or another import replaces it
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kv_heads = 0;       // 0: same as heads
    // Size of one attention head; 0: hidden / heads. Qwen3 sets it apart from the hidden size
    // (Qwen3-30B-A3B: 32 heads of 128 on a hidden size of 2048), so Q and the attention output
    // are heads * head_dim wide while the residual stream stays `hidden`.
    int head_dim = 0;
    int ffn_hidden = 0;     // 0: 4 * hidden
    int seq_len = 0;
    int vocab = 0;
    bool swiglu = false;    // gated MLP (Llama): three FFN matrices instead of two
    bool causal = true;     // causal attention mask (decoder LMs); false: every query sees every key
    // Set by training.framework unless the scenario gives them (StackChoices).
    AttentionKernel attention = AttentionKernel::Unfused;
    bool attention_dropout = true;  // dropout on the attention probabilities
    // Dropout on the attention and MLP outputs before each residual add (the bias-dropout-add
    // kernels keep a 1-byte mask per element); Megatron-Bridge's and NeMo 2's model configs set
    // hidden_dropout 0, and PyTorch's dropout with p = 0 returns its input, keeping no mask.
    bool hidden_dropout = true;
    // Transformer Engine's kernels around the GEMMs (training.transformer_engine): the fp8 casts
    // and transposes of every linear layer's input and output gradient under fp8, one fused
    // rotary-embedding kernel on Q and K for rotary (Llama-style) models.
    bool transformer_engine = false;
    Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  // training.fp8_recipe: how fp8 operands are scaled
    AttentionKind attention_kind = AttentionKind::Mha;
    // Multi-head latent attention (attention_kind mla; DeepSeek-V2/V3, their config.json names):
    // the hidden state is projected down to a query latent of q_lora_rank and a key/value latent
    // of kv_lora_rank plus one shared rotary key part of qk_rope_head_dim, each latent normalised
    // and projected up per head; a query/key head is qk_nope_head_dim + qk_rope_head_dim wide, a
    // value head v_head_dim. DeepSeek-V3: 1536, 512, 128, 64, 128 on 128 heads.
    int q_lora_rank = 0;
    int kv_lora_rank = 0;
    int qk_nope_head_dim = 0;
    int qk_rope_head_dim = 0;
    int v_head_dim = 0;
    bool mla() const { return attention_kind == AttentionKind::Mla; }
    // Mixture of experts (experts > 0): the MLP of every layer after the first dense_layers is
    // `experts` expert MLPs of expert_ffn_hidden each (same gating as the dense MLP), of which a
    // router (a top-k softmax gate, one h x experts GEMM) picks experts_per_token per token,
    // plus shared_experts expert MLPs every token passes through (one dense MLP of
    // shared_experts * expert_ffn_hidden). The dense layers keep the ffn_hidden MLP.
    int experts = 0;             // 0: a dense model
    int experts_per_token = 0;   // top-k; 0: 1 (set with experts)
    int expert_ffn_hidden = 0;   // 0: ffn_hidden
    int shared_experts = 0;
    int dense_layers = 0;        // the leading layers with a dense MLP (DeepSeek-V3: 3)
    // Tokens the busiest expert receives over the mean (1: balanced routing, as the published
    // MoE benchmarks force); the expert GEMMs of every rank run at the busiest's rows.
    double moe_load_imbalance = 1.0;
    // Multi-token prediction (DeepSeek-V3 §2.2; Megatron-Core's mtp_num_layers): after the last
    // layer, `mtp_layers` sequential modules each predict one token further, on the last pipeline
    // stage: the input embedding of the shifted tokens and the previous depth's hidden state, each
    // RMS-normalised, concatenated and projected (2h -> h), one transformer layer like the model's
    // last, the shared output head and a second cross-entropy.
    int mtp_layers = 0;

    int kv_heads_or_default() const { return mla() ? heads : (kv_heads > 0 ? kv_heads : heads); }
    // The width of a query (and key) head: under mla its non-rotary and rotary parts.
    int head_dim_or_default() const {
        if (mla()) return qk_nope_head_dim + qk_rope_head_dim;
        return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0);
    }
    // The width of a value head (and of a head of the attention output): head_dim but under mla.
    int v_head_dim_or_default() const { return mla() ? v_head_dim : head_dim_or_default(); }
    // Whether the heads' width differs from the hidden size (model.head_dim given and not hidden / heads).
    bool attention_width_differs() const {
        return !mla() && head_dim > 0 && static_cast<long long>(head_dim) * heads != hidden;
    }
    int ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
    bool moe() const { return experts > 0; }
    // Whether some layer has a norm that is a module of its own, whose output the layernorm
    // recompute module can drop (LayerDims::separate_norm1/2): latent attention's input norm, a
    // router's norm, or any norm without Transformer Engine (which fuses the others into the GEMM
    // after them).
    bool has_norm_modules() const { return mla() || moe() || !transformer_engine; }
    int top_k() const { return experts_per_token > 0 ? experts_per_token : 1; }
    int expert_ffn_or_default() const { return expert_ffn_hidden > 0 ? expert_ffn_hidden : ffn_or_default(); }
    // Whether global layer `layer` (0-based) has the mixture-of-experts MLP.
    bool moe_layer(int layer) const { return moe() && layer >= dense_layers; }
    int moe_layers() const { return moe() ? std::max(0, layers - dense_layers) : 0; }
};

enum class Schedule { GPipe, OneFOneB, Interleaved, ShiftedCriticalPath, ZeroBubbleH1, ZeroBubbleV, DualPipeV };
enum class Recompute { None, Full, Selective, StageAware };
// The modules of selective recomputation cuboid models (ParallelPlan::RecomputeModules).
enum class RecomputeModule { CoreAttn, MlaUpProj, Layernorm, MoeAct, Mlp, Moe, SharedExperts };
enum class TensorMode { OneD, TwoD, ThreeD, Atp };
enum class PartitionMethod { Auto, Uniform };
// Context parallelism: how the ranks of a context group, each holding 2 of the 2c chunks of every
// sequence, give attention the keys and values of the others (strategies/context_attention.hpp).
enum class ContextMode { Ring, AllGather, AllToAll };
// ATP (Cheng et al. 2023): which mesh direction the first linear layer of a block splits
// (column-first or row-first); Auto: chosen from the cluster's hierarchical communication matrix.
enum class AtpOrder { Auto, ColumnFirst, RowFirst };

// The training software stack whose defaults a scenario takes (strategies/framework.hpp).
enum class Framework : std::uint8_t { Megatron2021, MegatronCore };

// The keys a framework preset sets, as the scenario gave them (none: the preset's value). The
// effective values live in ModelSpec and ParallelPlan; apply_framework (strategies/framework.hpp)
// writes them from these and the preset whenever either changes.
struct StackChoices {
    Framework framework = Framework::MegatronCore;
    std::optional<AttentionKernel> attention;
    std::optional<bool> attention_dropout;
    std::optional<bool> hidden_dropout;
    std::optional<int> zero_stage;
    std::optional<bool> dp_overlap;
    std::optional<bool> tp_backward_overlap;
    std::optional<bool> transformer_engine;
};

// The cluster keys a GPU's rack-scale system presets (hw::GpuSystem: GB200/GB300 NVL72's trays
// of 4 GPUs, 72-GPU NVLink domain, one NIC per GPU), as the scenario gave them (none: the
// system's value, or the key's own default for a GPU without one). The effective values live in
// hw::ClusterSpec; apply_cluster_choices (strategies/cli/scenario_keys.cpp) writes them whenever
// cluster.gpu or one of these keys changes.
struct ClusterChoices {
    std::optional<int> gpus_per_node;
    std::optional<int> scale_up_domain;
    std::optional<int> nics_per_node;
    std::optional<double> nic_gbps;
    std::optional<hw::GpuSystem> system;  // of cluster.gpu
};

struct TrainingSpec {
    int global_batch = 0;                 // sequences per iteration
    int micro_batch = 1;                  // sequences per micro-batch
    sim::Precision precision = sim::Precision::Bf16;
    // The gradient buffer and its data-parallel reduction (training.grad_precision): unset, the
    // precision's default (fp32 main gradients under bf16 and fp8, Megatron's); bf16 halves the
    // buffer and the reduced bytes (Megatron-Core's grad_reduce_in_fp32 = False, PyTorch FSDP's
    // reduce_dtype = bf16).
    std::optional<sim::Precision> grad_precision;
    // The optimizer step on the host (Megatron-Core's optimizer_cpu_offload with its offload
    // fraction 1, DeepSpeed's ZeRO-Offload): the fp32 main weights and Adam moments live in host
    // memory, the GPU copies each step's gradient shard to the host, the CPU runs Adam over host
    // memory (cluster.host_memory_gb_per_s) and the updated 16-bit weights come back.
    bool optimizer_offload = false;
    // Activation offloading (Megatron-Core's cpu_offloading with cpu_offloading_num_layers = N,
    // activations only, as Megatron-Bridge's performance recipes set it): the stored activations
    // of the first N transformer layers go to host memory after each forward and come back before
    // the backward, on copy streams that overlap the compute.
    int activation_offload_layers = 0;
    std::optional<double> tokens;         // tokens to train, for time to train
};

struct ParallelPlan {
    int tensor = 1;
    int pipeline = 1;
    int data = 0;                         // 0: derived as gpus / (tensor * pipeline)
    int virtual_stages = 1;
    Schedule schedule = Schedule::OneFOneB;
    Recompute recompute = Recompute::None;
    // Megatron-Core's recompute_modules under recompute: selective, the parts of every layer that
    // run again before its backward instead of keeping their outputs: core_attn (the default, the
    // attention core of Korthikanti et al. 2022), mla_up_proj (multi-head latent attention's
    // up-projections and rotary embedding: Q, K and V written again from the kept latents),
    // layernorm (the norms that are modules of their own, not fused into the next GEMM: their
    // outputs written again from their kept inputs), moe_act (the experts' activation: its
    // output written again from the kept FC1 output before expert FC2's backward), mlp (a
    // dense layer's MLP checkpointed: its forward run again from its input before its backward),
    // moe (a mixture-of-experts layer's MLP checkpointed the same way, its all-to-alls with it) and
    // shared_experts (the shared experts' MLP checkpointed, inside moe's checkpoint when both).
    struct RecomputeModules {
        bool core_attn = true;
        bool mla_up_proj = false;
        bool layernorm = false;
        bool moe_act = false;
        bool mlp = false;
        bool moe = false;
        bool shared_experts = false;

    private:
        template <class Self>
        static auto& flag(Self& self, RecomputeModule m) {
            switch (m) {
                case RecomputeModule::CoreAttn: return self.core_attn;
                case RecomputeModule::MlaUpProj: return self.mla_up_proj;
                case RecomputeModule::Layernorm: return self.layernorm;
                case RecomputeModule::MoeAct: return self.moe_act;
                case RecomputeModule::Mlp: return self.mlp;
                case RecomputeModule::Moe: return self.moe;
                case RecomputeModule::SharedExperts: break;
            }
            return self.shared_experts;
        }

    public:
        bool& chosen(RecomputeModule m) { return flag(*this, m); }
        bool chosen(RecomputeModule m) const { return flag(*this, m); }
        // Megatron-Core's default, [core_attn].
        bool is_default() const {
            return core_attn && !mla_up_proj && !layernorm && !moe_act && !mlp && !moe && !shared_experts;
        }
    };
    RecomputeModules recompute_modules;
    TensorMode tensor_mode = TensorMode::OneD;
    bool sequence_parallel = false;
    int overlap_chunks = 1;
    int zero_stage = 0;
    // Context parallelism: c ranks split every sequence (Megatron-Core's order tp, cp, dp, pp: the
    // c ranks of a context group are consecutive after the tensor group); the gradients are
    // reduced and ZeRO shards over data x context.
    int context = 1;
    ContextMode context_mode = ContextMode::Ring;
    // Expert parallelism (mixture-of-experts models), Megatron-Core's layout: the expert layers
    // regroup the same tensor x context x data ranks of a stage as expert_tensor x expert x
    // expert-data (consecutive ranks first); each rank holds experts / expert of the experts,
    // each split over expert_tensor ranks, and the expert gradients are reduced over the
    // expert-data group of t*c*d / (expert_tensor * expert) ranks.
    int expert = 1;
    int expert_tensor = 1;
    // ZeRO-3 hybrid sharding: the data x context ranks one copy of the training state is sharded
    // over (consecutive ones, whole context groups); the d*c / shard_group copies all-reduce their
    // gradient shards. 0: all d*c ranks (plain ZeRO-3 / FSDP's full sharding).
    int shard_group = 0;
    bool dp_overlap = true;
    // Overlap the tensor-parallel all-reduce of input gradients with the weight-gradient GEMM
    // (Megatron-LM's asynchronous tensor-parallel all-reduce, 2022 on). false: the all-reduce
    // blocks the next kernel, as in Megatron-LM 2021 (SC'21).
    bool tp_backward_overlap = true;
    // Shifted critical path: Merak's R pass re-runs the whole stage (its code switches
    // checkpointing off for that call); false: only the checkpointed layers (seed_algorithms §1.1).
    bool scp_whole_stage_recompute = true;
    // ATP mesh d1 x d2 (d1 * d2 = tensor); {0, 0}: chosen with the order from the cluster.
    std::array<int, 2> atp_mesh{0, 0};
    AtpOrder atp_order = AtpOrder::Auto;
    // Layers per pipeline stage (per model chunk with virtual stages), a manual override of the
    // automatic partitioner; empty: the partitioner decides.
    std::vector<int> stage_layers;
    // Without stage_layers: Megatron's uniform split, or the automatic partitioner that balances
    // stage time and memory (strategies/partition/).
    PartitionMethod partition = PartitionMethod::Auto;
};

struct CostSpec {
    std::optional<double> gpu_hour_usd;
    std::optional<double> node_power_kw;
    // The owned cost's inputs (strategies/training_cost.hpp); unset: the catalog's cited figure.
    std::optional<double> gpu_purchase_usd;
    std::optional<double> power_usd_per_kwh;
    std::optional<double> pue;
    std::optional<double> amortisation_years;
    std::optional<double> utilisation;
};

struct Scenario {
    std::string name;
    ModelSpec model;
    hw::ClusterSpec cluster;
    TrainingSpec training;
    ParallelPlan parallel;
    CostSpec cost;
    ReliabilitySpec reliability;  // failures, checkpoints and restarts: goodput at scale
    StackChoices stack;
    ClusterChoices cluster_choices;
    // sweep axes in file order: dotted key -> values as written (applied with the --set rules)
    std::vector<std::pair<std::string, std::vector<std::string>>> sweep;

    // Not from the file: the command line's --max-events and --max-memory (plan_validation refuses
    // a plan whose estimated work exceeds them).
    WorkLimits limits;

    std::string source_file;                       // as given on the command line
    std::map<std::string, int> key_lines;          // dotted key -> line in source_file

    InputLocation where(const std::string& key) const;
};

std::string to_string(Schedule s);
std::string to_string(Recompute r);
// The modules named, in Megatron-Core's words: ["core_attn"], ["mla_up_proj"], or both.
std::vector<std::string> module_names(const ParallelPlan::RecomputeModules& m);
std::string to_string(TensorMode m);
std::string to_string(ContextMode m);
std::string to_string(AttentionKind k);

}  // namespace cuboid
