#include "strategies/cli/scenario_keys.hpp"

#include <algorithm>
#include <array>
#include <system_error>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "hardware_models/physical_limits.hpp"
#include "strategies/cli/enum_names.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/cli/hf_config.hpp"
#include "strategies/cli/value_parse.hpp"
#include "strategies/framework.hpp"
#include "strategies/names.hpp"

namespace cuboid::cli {
namespace {

using V = std::string_view;
using W = const InputLocation&;
using C = const SetContext&;
namespace L = hw::limits;

void check_at_most(double value, W w, double max) {
    if (value > max) throw InputError(w, fmt::format("must be <= {}, got {}", max, value));
}

void set_preset(Scenario& s, V v, W w, C c) {
    if (!c.names.model_preset) throw InputError(w, "model presets are not available in this build");
    const std::string name(v);
    try {
        s.model = c.names.model_preset(name);
    } catch (const InputError& e) {
        throw with_location_if_missing(e, w);
    }
    if (s.model.preset.empty()) s.model.preset = name;  // the resolver may give the canonical name
}

// A model preset replaces the whole model, the stack settings it holds included: they are the
// framework's again, or the scenario's own choice.
void set_model_preset(Scenario& s, V v, W w, C c) {
    set_preset(s, v, w, c);
    apply_framework(s);
}

void set_framework(Scenario& s, V v, W w, C) {
    if (v == "megatron-2021") s.stack.framework = Framework::Megatron2021;
    else if (v == "megatron-core") s.stack.framework = Framework::MegatronCore;
    else throw InputError(w, fmt::format("unknown framework '{}'; allowed: megatron-2021, megatron-core", v));
    apply_framework(s);
}

void set_attention(Scenario& s, V v, W w, C) {
    if (v == "fused") s.stack.attention = AttentionKernel::Fused;
    else if (v == "unfused") s.stack.attention = AttentionKernel::Unfused;
    else throw InputError(w, fmt::format("unknown attention kernel '{}'; allowed: fused, unfused", v));
    apply_framework(s);
}

void set_attention_kind(Scenario& s, V v, W w, C) {
    if (v == "mha") s.model.attention_kind = AttentionKind::Mha;
    else if (v == "mla") s.model.attention_kind = AttentionKind::Mla;
    else throw InputError(w, fmt::format("unknown attention kind '{}'; allowed: mha, mla", v));
}

void set_grad_precision(Scenario& s, V v, W w, C) {
    if (v == "fp32") s.training.grad_precision = sim::Precision::Fp32;
    else if (v == "bf16") s.training.grad_precision = sim::Precision::Bf16;
    else throw InputError(w, fmt::format("unknown gradient precision '{}'; allowed: fp32, bf16", v));
}

void set_attention_mask(Scenario& s, V v, W w, C) {
    if (v == "causal") s.model.causal = true;
    else if (v == "full") s.model.causal = false;
    else throw InputError(w, fmt::format("unknown attention mask '{}'; allowed: causal, full", v));
}

// The cluster layout from the keys the scenario gave, else the GPU's rack-scale system, else each
// key's default: a GB200 cluster is built of NVL72 racks unless the scenario says otherwise.
void apply_cluster_choices(Scenario& s) {
    const ClusterChoices& c = s.cluster_choices;
    const hw::ClusterSpec plain;
    const std::optional<hw::GpuSystem>& sys = c.system;
    s.cluster.gpus_per_node = c.gpus_per_node.value_or(sys ? sys->gpus_per_node : plain.gpus_per_node);
    s.cluster.nics_per_node = c.nics_per_node.value_or(sys ? sys->nics_per_node : plain.nics_per_node);
    s.cluster.nic_gbps = c.nic_gbps.value_or(sys ? sys->nic_gbps : plain.nic_gbps);
    s.cluster.scale_up_domain = c.scale_up_domain;
    if (!c.scale_up_domain && sys) s.cluster.scale_up_domain = sys->scale_up_domain;
}

void set_gpu(Scenario& s, V v, W w, C c) {
    s.cluster.gpu = std::string(v);
    if (!c.names.gpu_name) return;
    try {
        s.cluster.gpu = c.names.gpu_name(s.cluster.gpu);
        s.cluster_choices.system = c.names.gpu_system ? c.names.gpu_system(s.cluster.gpu) : std::nullopt;
    } catch (const InputError& e) {
        throw with_location_if_missing(e, w);
    }
    apply_cluster_choices(s);
}

// A file named by the scenario: a relative path is taken from the scenario file's folder.
std::string existing_file(V v, W w, C c, std::string_view what) {
    std::filesystem::path p{std::string(v)};
    if (p.is_relative() && !c.base_dir.empty()) p = c.base_dir / p;
    p = p.lexically_normal();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
        throw InputError(w, fmt::format("cannot read the {} '{}' (looked for '{}'; a relative path is "
                                        "taken from the scenario file's folder)", what, v, p.string()));
    return p.string();
}

void set_profile(Scenario& s, V v, W w, C c) { s.cluster.profile = existing_file(v, w, c, "profile"); }

// Like a preset, the import replaces the whole model, the stack settings it holds included.
void set_hf_config(Scenario& s, V v, W w, C c) {
    const std::string path = existing_file(v, w, c, "Hugging Face config");
    try {
        s.model = import_hf_config_file(path);
    } catch (const InputError& e) {
        throw InputError(w, e.what());  // the config's own location (file, field) stays in the text
    }
    apply_framework(s);
}

void set_partition(Scenario& s, V v, W w, C) {
    if (v == "auto") s.parallel.partition = PartitionMethod::Auto;
    else if (v == "uniform") s.parallel.partition = PartitionMethod::Uniform;
    else throw InputError(w, fmt::format("unknown partition '{}'; allowed: auto, uniform", v));
}

// The items of a list: "[6, 8]" (a YAML list, as the loader joins it), "6,8" or "6 8" (--set),
// and "6x8" when `x_separates`.
std::vector<std::string> list_items(V v, bool x_separates) {
    std::vector<std::string> items;
    std::string item;
    const auto flush = [&] {
        if (!item.empty()) items.push_back(item);
        item.clear();
    };
    for (const char ch : v) {
        if (ch == '[' || ch == ']' || ch == ',' || ch == ' ' || (x_separates && ch == 'x')) flush();
        else item.push_back(ch);
    }
    flush();
    return items;
}

// The integers >= 1 of a list (list_items).
std::vector<int> positive_ints(V v, W w, bool x_separates) {
    std::vector<int> values;
    for (const std::string& item : list_items(v, x_separates)) values.push_back(int_at_least(item, w, 1));
    return values;
}

// "[6, 8, 8, 6]", "6,8,8,6" or "6 8 8 6"; the totals are checked against the model and plan by
// validate_plan.
void set_stage_layers(Scenario& s, V v, W w, C) {
    std::vector<int> layers = positive_ints(v, w, false);
    if (layers.empty()) throw InputError(w, "expected a list of layer counts, one per model chunk");
    s.parallel.stage_layers = std::move(layers);
}

// Megatron-Core's recompute_modules, "[core_attn, mla_up_proj]" (a YAML list), "core_attn,mla_up_proj"
// or with spaces (--set): Megatron-Core's modules (recompute_module_table), each named once.
void set_recompute_modules(Scenario& s, V v, W w, C) {
    std::string allowed;
    for (const NamedValue& n : named_values(recompute_module_table())) allowed += (allowed.empty() ? "" : ", ") + n.name;
    const std::vector<std::string> words = list_items(v, false);
    if (words.empty())
        throw InputError(w, "expected a list of modules, e.g. [core_attn] or [mla_up_proj]; allowed: " + allowed);
    ParallelPlan::RecomputeModules m{false, false};
    for (const std::string& word : words) {
        bool& chosen = m.chosen(parse_recompute_module(word, w));
        if (chosen) throw InputError(w, fmt::format("'{}' is named twice", word));
        chosen = true;
    }
    s.parallel.recompute_modules = m;
}

// "[4, 2]", "4x2", "4,2" or "4 2": the ATP mesh d1 x d2; its product is checked against
// parallel.tensor by validate_plan.
void set_atp_mesh(Scenario& s, V v, W w, C) {
    const std::vector<int> sizes = positive_ints(v, w, true);
    if (sizes.size() != 2) throw InputError(w, fmt::format("expected two mesh sizes [d1, d2], got '{}'", v));
    s.parallel.atp_mesh = {sizes[0], sizes[1]};
}

constexpr auto kKeys = std::to_array<KeyDef>({
    {"name", "text", "", "the file name without .yaml", "any", "copied into the output",
     [](Scenario& s, V v, W, C) { s.name = std::string(v); }},
    {"model.preset", "name", "", "none", "`cuboid list models`",
     "a known model; applied first, the other model keys override it", set_model_preset},
    {"model.hf_config", "path", "", "none", "a Hugging Face config.json (model_type: llama, mistral, mixtral, qwen2, "
     "qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gpt2, gpt_neox)",
     "the model's shape read from a transformers config; applied first like model.preset (give one of the two), "
     "the other model keys override it; relative to the scenario's folder", set_hf_config},
    {"model.layers", "integer", "", "from the preset", ">= 1", "transformer layers",
     [](Scenario& s, V v, W w, C) { s.model.layers = int_at_least(v, w, 1); }},
    {"model.hidden", "integer", "", "from the preset", ">= 1", "hidden size h",
     [](Scenario& s, V v, W w, C) { s.model.hidden = int_at_least(v, w, 1); }},
    {"model.heads", "integer", "", "from the preset", ">= 1", "attention heads",
     [](Scenario& s, V v, W w, C) { s.model.heads = int_at_least(v, w, 1); }},
    {"model.kv_heads", "integer", "", "heads", ">= 1", "key/value heads (grouped-query attention when < heads)",
     [](Scenario& s, V v, W w, C) { s.model.kv_heads = int_at_least(v, w, 1); }},
    {"model.head_dim", "integer", "", "hidden / heads", ">= 1",
     "size of one attention head: Q and the attention output are heads * head_dim wide (Qwen3: 128 on a smaller hidden size)",
     [](Scenario& s, V v, W w, C) { s.model.head_dim = int_at_least(v, w, 1); }},
    {"model.ffn_hidden", "integer", "", "4 * hidden", ">= 1", "inner size of the MLP",
     [](Scenario& s, V v, W w, C) { s.model.ffn_hidden = int_at_least(v, w, 1); }},
    {"model.seq_len", "integer", "tokens", "from the preset", ">= 1", "sequence length s",
     [](Scenario& s, V v, W w, C) { s.model.seq_len = int_at_least(v, w, 1); }},
    {"model.vocab", "integer", "tokens", "from the preset", ">= 1", "vocabulary size V",
     [](Scenario& s, V v, W w, C) { s.model.vocab = int_at_least(v, w, 1); }},
    {"model.swiglu", "boolean", "", "false (or the preset's)", "true | false",
     "gated MLP with three matrices (Llama) instead of two",
     [](Scenario& s, V v, W w, C) { s.model.swiglu = parse_bool(v, w); }},
    {"model.attention", "name", "", "from training.framework (megatron-core: fused; megatron-2021: unfused)",
     "fused | unfused",
     "attention core as one fused kernel each way (FlashAttention / cuDNN: no s x s scores stored) or as "
     "batched GEMMs with softmax and dropout kernels (Megatron-LM 2021)",
     set_attention},
    {"model.attention_dropout", "boolean", "",
     "from training.framework (megatron-core: false; megatron-2021: true)", "true | false",
     "dropout on the attention probabilities",
     [](Scenario& s, V v, W w, C) { s.stack.attention_dropout = parse_bool(v, w); apply_framework(s); }},
    {"model.hidden_dropout", "boolean", "",
     "from training.framework (megatron-core: false; megatron-2021: true)", "true | false",
     "dropout on the attention and MLP outputs before each residual add (a 1-byte mask per element kept for "
     "the backward)",
     [](Scenario& s, V v, W w, C) { s.stack.hidden_dropout = parse_bool(v, w); apply_framework(s); }},
    {"model.attention_mask", "name", "", "causal", "causal | full",
     "causal: each token attends to the ones before it (a fused kernel skips the masked blocks); full: to all",
     set_attention_mask},
    {"model.attention_kind", "name", "", "mha", "mha | mla",
     "how attention projects Q, K and V: mha (multi-head; grouped-query with model.kv_heads < heads); mla "
     "(DeepSeek-V2/V3's multi-head latent attention: low-rank latents of Q and K/V, sized by model.q_lora_rank, "
     "kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)",
     set_attention_kind},
    {"model.mtp_layers", "integer", "", "0", ">= 0",
     "multi-token prediction modules after the last layer (DeepSeek-V3: 1), each a projection, one layer like the "
     "last and a second pass of the output head, on the last pipeline stage",
     [](Scenario& s, V v, W w, C) { s.model.mtp_layers = int_at_least(v, w, 0); }},
    {"model.q_lora_rank", "integer", "", "none (required by mla)", ">= 1",
     "mla: width of the query latent that the hidden state is projected down to (DeepSeek-V3: 1536)",
     [](Scenario& s, V v, W w, C) { s.model.q_lora_rank = int_at_least(v, w, 1); }},
    {"model.kv_lora_rank", "integer", "", "none (required by mla)", ">= 1",
     "mla: width of the key/value latent (DeepSeek-V3: 512)",
     [](Scenario& s, V v, W w, C) { s.model.kv_lora_rank = int_at_least(v, w, 1); }},
    {"model.qk_nope_head_dim", "integer", "", "none (required by mla)", ">= 1",
     "mla: the part of a query/key head without rotary embedding (DeepSeek-V3: 128)",
     [](Scenario& s, V v, W w, C) { s.model.qk_nope_head_dim = int_at_least(v, w, 1); }},
    {"model.qk_rope_head_dim", "integer", "", "none (required by mla)", ">= 1",
     "mla: the rotary part of a query/key head; the key's is shared by all heads (DeepSeek-V3: 64)",
     [](Scenario& s, V v, W w, C) { s.model.qk_rope_head_dim = int_at_least(v, w, 1); }},
    {"model.v_head_dim", "integer", "", "none (required by mla)", ">= 1",
     "mla: width of a value head and of a head of the attention output (DeepSeek-V3: 128)",
     [](Scenario& s, V v, W w, C) { s.model.v_head_dim = int_at_least(v, w, 1); }},
    {"model.experts", "integer", "", "0 (a dense model)", ">= 1",
     "mixture of experts: routed experts of every layer after model.dense_layers (each an MLP of expert_ffn_hidden)",
     [](Scenario& s, V v, W w, C) { s.model.experts = int_at_least(v, w, 1); }},
    {"model.experts_per_token", "integer", "", "1", "1 .. experts", "experts the router picks per token (top-k)",
     [](Scenario& s, V v, W w, C) { s.model.experts_per_token = int_at_least(v, w, 1); }},
    {"model.expert_ffn_hidden", "integer", "", "ffn_hidden", ">= 1", "inner size of each expert's MLP",
     [](Scenario& s, V v, W w, C) { s.model.expert_ffn_hidden = int_at_least(v, w, 1); }},
    {"model.shared_experts", "integer", "", "0", ">= 0",
     "experts every token passes through besides the routed ones (one MLP of shared_experts * expert_ffn_hidden)",
     [](Scenario& s, V v, W w, C) { s.model.shared_experts = int_at_least(v, w, 0); }},
    {"model.dense_layers", "integer", "layers", "0", "0 .. layers - 1",
     "the leading layers that keep the dense MLP of ffn_hidden (DeepSeek-V3: 3)",
     [](Scenario& s, V v, W w, C) { s.model.dense_layers = int_at_least(v, w, 0); }},
    {"model.moe_load_imbalance", "number", "busiest expert's tokens / mean", "1 (balanced, as the published benchmarks force)",
     "1 .. experts / experts_per_token",
     "routing imbalance: every rank's expert GEMMs and all-to-alls run at the busiest expert's share",
     [](Scenario& s, V v, W w, C) { s.model.moe_load_imbalance = number_between(v, w, 1.0, 1e6); }},
    {"cluster.gpu", "name", "", "a100-sxm-80gb", "`cuboid list gpus`", "GPU model of every node", set_gpu},
    {"cluster.nodes", "integer", "", "1", ">= 1", "nodes in the cluster",
     [](Scenario& s, V v, W w, C) { s.cluster.nodes = int_at_least(v, w, 1); }},
    {"cluster.gpus_per_node", "integer", "", "8 (gb200, gb300: 4, a compute tray)", ">= 1", "GPUs in each node",
     [](Scenario& s, V v, W w, C) { s.cluster_choices.gpus_per_node = int_at_least(v, w, 1); apply_cluster_choices(s); }},
    {"cluster.scale_up_domain", "integer", "GPUs", "gpus_per_node (gb200, gb300: 72, an NVL72 rack)",
     "a multiple of gpus_per_node that divides the GPUs",
     "GPUs per NVLink domain: nodes (trays) whose GPUs share NVLink switches, as GB200 NVL72's 18 trays of 4 GPUs",
     [](Scenario& s, V v, W w, C) { s.cluster_choices.scale_up_domain = int_at_least(v, w, 1); apply_cluster_choices(s); }},
    {"cluster.intra_node", "name", "", "nvswitch", "nvswitch | nvlink-mesh | pcie", "how GPUs of a node connect",
     [](Scenario& s, V v, W w, C) { s.cluster.intra_node = hw::parse_intra_node_kind(std::string(v), w); }},
    {"cluster.intra_node_gbps", "number", "GB/s (1e9 bytes/s)", "from the GPU catalog", "1.25e-10 .. 1.25e5 (1 bit/s .. 1 Pbit/s)",
     "per GPU, one direction, scale-up bandwidth",
     [](Scenario& s, V v, W w, C) { s.cluster.intra_node_gbps = number_between(v, w, L::kMinGigabytesPerSecond, L::kMaxGigabytesPerSecond); }},
    {"cluster.host_memory_gb_per_s", "number", "GB/s (1e9 bytes/s)", "none (needed by training.optimizer_offload)",
     "1.25e-10 .. 1.25e5",
     "memory bandwidth of one node's host CPUs as a STREAM copy achieves it, shared by its GPUs (DGX H100's two "
     "Xeon 8480C have 16 channels of DDR5-4800: 614 GB/s peak)",
     [](Scenario& s, V v, W w, C) {
         s.cluster.host_memory_gb_per_s = number_between(v, w, L::kMinGigabytesPerSecond, L::kMaxGigabytesPerSecond);
     }},
    {"cluster.inter_node.kind", "name", "", "infiniband", "infiniband | roce | ethernet", "network between nodes",
     [](Scenario& s, V v, W w, C) { s.cluster.inter_node = hw::parse_inter_node_kind(std::string(v), w); }},
    {"cluster.inter_node.nic_gbps", "number", "Gbit/s (1e9 bits/s)", "200 (gb200: 400; gb300: 800)", "1e-9 .. 1e6 (1 bit/s .. 1 Pbit/s)", "per NIC, one direction",
     [](Scenario& s, V v, W w, C) {
         s.cluster_choices.nic_gbps = number_between(v, w, L::kMinGigabitsPerSecond, L::kMaxGigabitsPerSecond);
         apply_cluster_choices(s);
     }},
    {"cluster.inter_node.nics_per_node", "integer", "", "8 (gb200, gb300: 4, one per GPU)", ">= 1", "network adapters per node",
     [](Scenario& s, V v, W w, C) { s.cluster_choices.nics_per_node = int_at_least(v, w, 1); apply_cluster_choices(s); }},
    {"cluster.inter_node.topology", "name", "", "fat-tree", "`cuboid list topologies`",
     "shape of the network between nodes",
     [](Scenario& s, V v, W w, C) { s.cluster.topology = hw::parse_network_topology(std::string(v), w); }},
    {"cluster.inter_node.oversubscription", "number", "", "1.0", "1 .. 1000",
     "leaf down-link : up-link bandwidth ratio",
     [](Scenario& s, V v, W w, C) { s.cluster.oversubscription = number_between(v, w, 1.0, L::kMaxOversubscription); }},
    {"cluster.profile", "path", "", "none", "a readable file", "calibrated hardware profile; relative to the scenario's folder",
     set_profile},
    {"training.global_batch", "integer", "sequences", "required", ">= 1", "sequences per iteration",
     [](Scenario& s, V v, W w, C) { s.training.global_batch = int_at_least(v, w, 1); }},
    {"training.micro_batch", "integer", "sequences", "1", ">= 1", "sequences per micro-batch",
     [](Scenario& s, V v, W w, C) { s.training.micro_batch = int_at_least(v, w, 1); }},
    {"training.precision", "name", "", "bf16", "fp32 | tf32 | fp16 | bf16 | fp8", "arithmetic of the matrix products",
     [](Scenario& s, V v, W w, C) { s.training.precision = parse_suggesting(parse_precision, precision_words(), v, w); }},
    {"training.grad_precision", "name", "", "fp32 (under bf16 and fp8; fp16: fp16 with an fp32 copy)", "fp32 | bf16",
     "the gradient buffer and its data-parallel reduction: bf16 halves both (Megatron-Core grad_reduce_in_fp32 off, "
     "PyTorch FSDP reduce_dtype bf16); bf16 or fp8 training only",
     set_grad_precision},
    {"training.optimizer_offload", "boolean", "", "false", "true | false",
     "the optimizer step on the host: main weights and Adam moments in host memory (off the GPU), the gradient "
     "shard copied over the host link, Adam at cluster.host_memory_gb_per_s, the 16-bit weights copied back; "
     "needs parallel.zero_stage >= 1",
     [](Scenario& s, V v, W w, C) { s.training.optimizer_offload = parse_bool(v, w); }},
    {"training.activation_offload_layers", "integer", "layers", "0", "0 .. model.layers - 1; parallel.pipeline 1, "
     "parallel.recompute none",
     "activation offloading (Megatron-Core cpu_offloading_num_layers, activations only): the first N layers' stored "
     "activations copied to host memory after each forward and back before the backward (one layer ahead), on "
     "copy streams that overlap the compute, at the GPU's host copy rates",
     [](Scenario& s, V v, W w, C) { s.training.activation_offload_layers = int_at_least(v, w, 0); }},
    {"training.framework", "name", "", "megatron-core", "megatron-core | megatron-2021",
     "the training stack whose defaults apply: model.attention, model.attention_dropout, model.hidden_dropout, "
     "parallel.zero_stage, "
     "parallel.dp_overlap, parallel.tp_backward_overlap, training.transformer_engine (each key given in the "
     "scenario wins)",
     set_framework},
    {"training.transformer_engine", "boolean", "",
     "from training.framework (megatron-core: true; megatron-2021: false)", "true | false",
     "Transformer Engine's kernels around the GEMMs: under fp8 the cast and transpose of every linear layer's "
     "input and output gradient; for rotary (swiglu) models one fused RoPE kernel on Q and K each way",
     [](Scenario& s, V v, W w, C) { s.stack.transformer_engine = parse_bool(v, w); apply_framework(s); }},
    {"training.fp8_recipe", "name", "", "delayed", "delayed | current | mxfp8",
     "how Transformer Engine scales the fp8 operands of the linear layers (with precision fp8 and "
     "transformer_engine): per-tensor from the amax history, per-tensor from the tensor's own amax (one more "
     "pass per cast), or MXFP8 blocks of 32 (Blackwell, CDNA4 GPUs)",
     [](Scenario& s, V v, W w, C) { s.model.fp8_recipe = parse_suggesting(parse_fp8_recipe, fp8_recipe_words(), v, w); }},
    {"training.tokens", "number", "tokens", "none", "> 0, <= 1e18", "tokens to train, for time to train, cost and energy",
     [](Scenario& s, V v, W w, C) { s.training.tokens = number_above(v, w, 0.0); check_at_most(*s.training.tokens, w, L::kMaxTrainingTokens); }},
    {"parallel.tensor", "integer", "GPUs", "1", ">= 1", "tensor-parallel degree t",
     [](Scenario& s, V v, W w, C) { s.parallel.tensor = int_at_least(v, w, 1); }},
    {"parallel.pipeline", "integer", "GPUs", "1", ">= 1", "pipeline-parallel degree p (stages)",
     [](Scenario& s, V v, W w, C) { s.parallel.pipeline = int_at_least(v, w, 1); }},
    {"parallel.data", "integer", "GPUs", "GPUs / (t * c * p)", ">= 1; t * c * p * d = GPUs", "data-parallel degree d",
     [](Scenario& s, V v, W w, C) { s.parallel.data = int_at_least(v, w, 1); }},
    {"parallel.context", "integer", "GPUs", "1", ">= 1, 2c divides model.seq_len",
     "context-parallel degree c: each sequence split over c GPUs (2 of its 2c chunks each, balancing causal attention)",
     [](Scenario& s, V v, W w, C) { s.parallel.context = int_at_least(v, w, 1); }},
    {"parallel.context_mode", "name", "", "ring", "`cuboid list context-modes`",
     "how context parallelism gives attention the other ranks' keys and values",
     [](Scenario& s, V v, W w, C) { s.parallel.context_mode = parse_suggesting(parse_context_mode, context_mode_words(), v, w); }},
    {"parallel.expert", "integer", "GPUs", "1", ">= 1, divides model.experts; expert * expert_tensor divides tensor * context * data",
     "expert-parallel degree ep: each rank holds experts / ep experts; tokens reach them by all-to-all",
     [](Scenario& s, V v, W w, C) { s.parallel.expert = int_at_least(v, w, 1); }},
    {"parallel.expert_tensor", "integer", "GPUs", "1", ">= 1, divides model.expert_ffn_hidden",
     "expert tensor-parallel degree: each expert split over expert_tensor ranks (the rest of t*c*d / (expert * "
     "expert_tensor) is the expert-data group that reduces the expert gradients)",
     [](Scenario& s, V v, W w, C) { s.parallel.expert_tensor = int_at_least(v, w, 1); }},
    {"parallel.virtual_stages", "integer", "", "1", ">= 1", "model chunks per GPU (interleaved schedule)",
     [](Scenario& s, V v, W w, C) { s.parallel.virtual_stages = int_at_least(v, w, 1); }},
    {"parallel.schedule", "name", "", "1f1b", "`cuboid list schedules`", "pipeline schedule",
     [](Scenario& s, V v, W w, C) { s.parallel.schedule = parse_suggesting(parse_schedule, schedule_words(), v, w); }},
    {"parallel.recompute", "name", "", "none", "`cuboid list recompute`", "activation recomputation",
     [](Scenario& s, V v, W w, C) { s.parallel.recompute = parse_suggesting(parse_recompute, recompute_words(), v, w); }},
    {"parallel.recompute_modules", "list", "", "[core_attn]",
     "core_attn, mla_up_proj, layernorm, moe_act, mlp, moe, shared_experts (each at most once)",
     "recompute selective: what runs again before the backward (Megatron-Core's recompute_modules): the attention "
     "core, latent attention's up-projections, the norms that are modules of their own, the experts' activation, "
     "a dense layer's MLP, a mixture-of-experts layer's MLP, its shared experts",
     set_recompute_modules},
    {"parallel.tensor_mode", "name", "", "1d", "`cuboid list tensor-modes`", "how tensor parallelism splits the layers",
     [](Scenario& s, V v, W w, C) { s.parallel.tensor_mode = parse_suggesting(parse_tensor_mode, tensor_mode_words(), v, w); }},
    {"parallel.sequence_parallel", "boolean", "", "false", "true | false",
     "split norms and dropout along the sequence across the tensor group (Korthikanti et al. 2022)",
     [](Scenario& s, V v, W w, C) { s.parallel.sequence_parallel = parse_bool(v, w); }},
    {"parallel.overlap_chunks", "integer", "", "1", ">= 1",
     "> 1: split each micro-batch so tensor-parallel communication overlaps compute",
     [](Scenario& s, V v, W w, C) { s.parallel.overlap_chunks = int_at_least(v, w, 1); }},
    {"parallel.atp_mesh", "list", "GPUs", "chosen", "[d1, d2], d1 * d2 = tensor",
     "tensor_mode atp: the 2D device mesh, d1 along consecutive GPUs; absent: chosen from the cluster",
     set_atp_mesh},
    {"parallel.atp_order", "name", "", "auto", "auto | column-first | row-first",
     "tensor_mode atp: which mesh axis splits the first linear's columns; auto: chosen from the cluster",
     [](Scenario& s, V v, W w, C) { s.parallel.atp_order = parse_atp_order(std::string(v), w); }},
    {"parallel.partition", "name", "", "auto", "auto | uniform",
     "layers per pipeline stage: balanced for time and memory (auto), or Megatron's equal split (uniform)",
     set_partition},
    {"parallel.stage_layers", "list", "layers", "from parallel.partition", "one integer >= 1 per model chunk, sum = model.layers",
     "layers of each model chunk (chunk j = local chunk * pipeline + stage), overriding parallel.partition",
     set_stage_layers},
    {"parallel.zero_stage", "integer", "", "from training.framework (megatron-core: 1, the distributed optimizer; megatron-2021: 0)",
     "0..3", "ZeRO sharding of optimizer state (1), gradients (2), weights (3); experts over the expert-data group",
     [](Scenario& s, V v, W w, C) { s.stack.zero_stage = int_between(v, w, 0, 3); apply_framework(s); }},
    {"parallel.shard_group", "integer", "GPUs", "data * context (full sharding)",
     ">= 1, divides data * context, a multiple of context; zero_stage 3; with experts, expert * expert_tensor divides "
     "tensor * shard_group and is at most half of it",
     "ZeRO-3 hybrid sharding: data x context ranks one copy of the state is sharded over (routed experts over the "
     "expert-data ranks among them); copies all-reduce gradients",
     [](Scenario& s, V v, W w, C) { s.parallel.shard_group = int_at_least(v, w, 1); }},
    {"parallel.dp_overlap", "boolean", "", "from training.framework (megatron-core: true; megatron-2021: false)",
     "true | false", "overlap gradient reduction (and the ZeRO parameter all-gather) with compute",
     [](Scenario& s, V v, W w, C) { s.stack.dp_overlap = parse_bool(v, w); apply_framework(s); }},
    {"parallel.tp_backward_overlap", "boolean", "", "from training.framework (megatron-core: true; megatron-2021: false)",
     "true | false",
     "overlap the tensor-parallel all-reduce of input gradients with the weight-gradient GEMM (Megatron-LM 2022+); false: it blocks, as in Megatron-LM 2021",
     [](Scenario& s, V v, W w, C) { s.stack.tp_backward_overlap = parse_bool(v, w); apply_framework(s); }},
    {"cost.gpu_hour_usd", "number", "US dollars per GPU-hour", "none", "0 .. 1e6", "price for the cost of training",
     [](Scenario& s, V v, W w, C) { s.cost.gpu_hour_usd = number_between(v, w, 0.0, L::kMaxGpuHourUsd); }},
    {"cost.node_power_kw", "number", "kW", "none", "0 .. 1e4", "power drawn by one node, for the energy of training",
     [](Scenario& s, V v, W w, C) { s.cost.node_power_kw = number_between(v, w, 0.0, L::kMaxNodePowerKw); }},
    {"cost.gpu_purchase_usd", "number", "US dollars per GPU", "the catalog's price of the GPU (`cuboid list gpus`, hardware_models/catalog/economics.yaml)",
     "0 .. 1e7", "purchase price per GPU, for the owned cost (capex share of the training)",
     [](Scenario& s, V v, W w, C) { s.cost.gpu_purchase_usd = number_between(v, w, 0.0, L::kMaxGpuPurchaseUsd); }},
    {"cost.power_usd_per_kwh", "number", "US dollars per kWh", "0.0806 (US industrial average 2023, EIA)", "0 .. 10",
     "electricity price, for the owned cost's energy",
     [](Scenario& s, V v, W w, C) { s.cost.power_usd_per_kwh = number_between(v, w, 0.0, L::kMaxPowerUsdPerKwh); }},
    {"cost.pue", "number", "facility power / IT power", "1.58 (industry average 2023, Uptime Institute)", "1 .. 10",
     "power usage effectiveness of the facility, for the owned cost's energy",
     [](Scenario& s, V v, W w, C) { s.cost.pue = number_between(v, w, 1.0, L::kMaxPue); }},
    {"cost.amortisation_years", "number", "years", "5 (servers' useful life, Amazon 10-K 2024)", "0.1 .. 30",
     "years over which the purchase price is spread, for the owned cost",
     [](Scenario& s, V v, W w, C) { s.cost.amortisation_years = number_between(v, w, L::kMinAmortisationYears, L::kMaxAmortisationYears); }},
    {"cost.utilisation", "number", "fraction of the amortisation period in use", "1.0 (a lower bound of the owned cost)", "0.01 .. 1",
     "share of the machines' life they do useful work: each training carries the idle rest",
     [](Scenario& s, V v, W w, C) { s.cost.utilisation = number_between(v, w, L::kMinUtilisation, 1.0); }},
    {"reliability.failures_per_gpu_day", "number", "interruptions per GPU per day", "4.74e-4 (Llama 3: 419 in 54 days on 16,384 GPUs)",
     "0 .. 1", "unexpected job interruptions, for goodput and the effective time to train",
     [](Scenario& s, V v, W w, C) { s.reliability.failures_per_gpu_day = number_between(v, w, 0.0, 1.0); }},
    {"reliability.checkpoint_gb_per_s", "number", "GB/s (1e9 bytes/s)", "2000 (Llama 3's storage, 2 TB/s)", "1e-3 .. 1e6",
     "storage bandwidth of the whole job for writing and reading checkpoints",
     [](Scenario& s, V v, W w, C) { s.reliability.checkpoint_gb_per_s = number_between(v, w, 1e-3, 1e6); }},
    {"reliability.checkpoint_interval_s", "number", "s", "Daly's optimum", "1 .. 1e7",
     "seconds of training between checkpoints",
     [](Scenario& s, V v, W w, C) { s.reliability.checkpoint_interval_s = number_between(v, w, 1.0, 1e7); }},
    {"reliability.restart_overhead_s", "number", "s", "0", "0 .. 1e6",
     "time to restart after a failure beyond reading the checkpoint (scheduling, initialisation)",
     [](Scenario& s, V v, W w, C) { s.reliability.restart_overhead_s = number_between(v, w, 0.0, 1e6); }},
    {"sweep", "map", "", "none", "dotted key -> non-empty list of values", "axes of `cuboid sweep`", nullptr},
});

template <class F>
const KeyDef* find_in(F&& pred) {
    const auto it = std::find_if(kKeys.begin(), kKeys.end(), pred);
    return it == kKeys.end() ? nullptr : &*it;
}

}  // namespace

std::span<const KeyDef> scenario_keys() {
    return kKeys;
}

const KeyDef* find_key(std::string_view dotted) {
    return find_in([&](const KeyDef& k) { return k.key == dotted; });
}

bool is_section(std::string_view dotted) {
    return find_in([&](const KeyDef& k) {
               return k.key.size() > dotted.size() && k.key.starts_with(dotted) && k.key[dotted.size()] == '.';
           }) != nullptr;
}

std::vector<std::string> allowed_children(std::string_view section) {
    std::vector<std::string> out;
    const std::size_t skip = section.empty() ? 0 : section.size() + 1;
    for (const auto& k : scenario_keys()) {
        if (!section.empty() && !(k.key.starts_with(section) && k.key.size() > skip && k.key[section.size()] == '.'))
            continue;
        const std::string_view rest = k.key.substr(skip);
        std::string child(rest.substr(0, rest.find('.')));
        if (std::find(out.begin(), out.end(), child) == out.end()) out.push_back(std::move(child));
    }
    return out;
}

bool replaces_model(std::string_view dotted) { return dotted == "model.preset" || dotted == "model.hf_config"; }

std::vector<std::string> settable_keys() {
    std::vector<std::string> out;
    for (const auto& k : scenario_keys())
        if (k.set) out.emplace_back(k.key);
    return out;
}

}  // namespace cuboid::cli
