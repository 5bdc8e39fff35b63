#include "validate/published/modern_rows.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/core.h>
#include <fmt/format.h>

#include "strategies/cli/catalog_bridge.hpp"
#include "validate/published/row_simulation.hpp"

namespace cuboid::validate {
namespace {

std::string first_word(const std::string& text) { return text.substr(0, text.find(' ')); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// A field that holds a whole number, or nullopt when it is empty; anything else is refused.
std::optional<int> count(const CsvTable& t, std::size_t r, const char* column) {
    if (t.empty(r, column)) return std::nullopt;
    const double v = t.number(r, column);
    if (v != std::floor(v) || v < 0 || v > 1e9)
        throw std::runtime_error(fmt::format("column '{}': not a whole number: '{}'", column, t.text(r, column)));
    return static_cast<int>(v);
}

bool is_count(const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The whole number after `name ` in `text` ("kv_lora_rank 512"), or nullopt.
std::optional<int> number_after(const std::string& text, const std::string& name) {
    const std::size_t at = text.find(name + " ");
    if (at == std::string::npos) return std::nullopt;
    std::size_t end = at + name.size() + 1, first = end;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == first) return std::nullopt;
    return std::stoi(text.substr(first, end - first));
}

// DeepSeek's multi-head latent attention as the kv_heads column writes it: "MLA (kv_lora_rank 512,
// q_lora_rank 1536, qk 128+64 rope, v 128)", as scenario overrides; nullopt for anything else.
std::optional<std::vector<std::string>> latent_attention(const std::string& text) {
    if (!text.starts_with("MLA (")) return std::nullopt;
    const auto kv = number_after(text, "kv_lora_rank"), q = number_after(text, "q_lora_rank");
    const auto nope = number_after(text, "qk"), v = number_after(text, "v");
    const std::size_t plus = text.find("+", text.find("qk "));
    const auto rope = plus == std::string::npos ? std::nullopt : number_after(" " + text.substr(plus + 1), "");
    if (!kv || !q || !nope || !rope || !v) return std::nullopt;
    return std::vector<std::string>{"model.attention_kind=mla", fmt::format("model.kv_lora_rank={}", *kv),
                                    fmt::format("model.q_lora_rank={}", *q), fmt::format("model.qk_nope_head_dim={}", *nope),
                                    fmt::format("model.qk_rope_head_dim={}", *rope), fmt::format("model.v_head_dim={}", *v)};
}

// cuboid's arithmetic for a row's precision, or "" when cuboid has none like it. "fp8-cs" and
// "fp8-mx" are Transformer Engine's current scaling and MXFP8 recipes (fp8_recipe below); "amp_"
// is llm-foundry's autocast to that type.
std::string cuboid_precision(const std::string& written) {
    std::string p = first_word(written);
    if (p.starts_with("amp_")) p = p.substr(4);
    if (p == "fp8-cs" || p == "fp8-mx") p = "fp8";
    return p == "fp8" || p == "bf16" || p == "fp16" ? p : "";
}

// The training.fp8_recipe a row's precision states; none: the base scenario's (plain "fp8": the
// source does not say, and Transformer Engine's default recipe is delayed scaling).
std::optional<std::string> fp8_recipe(const std::string& written) {
    const std::string p = first_word(written);
    if (p == "fp8-cs") return "current";
    if (p == "fp8-mx") return "mxfp8";
    return std::nullopt;
}

// Model families whose MLP is gated (SwiGLU: three matrices); the others' is two (GELU, squared
// ReLU). The CSV gives the family in the model's name only.
bool gated_mlp(const std::string& model) {
    const std::string m = lower(model);
    return contains(m, "llama") || contains(m, "qwen") || contains(m, "deepseek");
}

// What the row needs that cuboid does not model, each from the field that asks for it. Empty:
// the row is expressible.
std::vector<std::string> missing_features(const CsvTable& t, std::size_t r, const std::string& catalog_gpu) {
    std::vector<std::string> needs;
    const auto text = [&](const char* column) -> const std::string& { return t.text(r, column); };
    const int ep = count(t, r, "ep").value_or(1);
    if (text("moe") != "yes" && ep > 1)
        needs.push_back(fmt::format("expert parallelism (ep={}) without a mixture of experts", ep));
    if (!t.empty(r, "kv_heads") && !is_count(text("kv_heads")) && !latent_attention(text("kv_heads")))
        needs.push_back(fmt::format("kv_heads '{}' is neither a head count nor a multi-head latent attention shape",
                                    text("kv_heads")));
    if (catalog_gpu.empty()) {
        const std::string& gpu = text("gpu");
        needs.push_back(fmt::format("GPU {} not in the catalog{}", first_word(gpu), gpu.substr(first_word(gpu).size())));
    }
    const std::string& precision = text("precision");
    if (cuboid_precision(precision).empty())
        needs.push_back(fmt::format("precision '{}' not modelled", precision));
    if (t.empty(r, "micro_batch") && count(t, r, "pp").value_or(1) > 1)
        needs.push_back(fmt::format("micro-batch size not stated (pipeline {})", text("pp")));
    return needs;
}

// GPUs per NVLink domain a job of `nodes` trays gets on racks of the GPU's system (GB200 NVL72:
// 18 trays): Megatron-Bridge's launcher asks Slurm for --segment = the largest divisor of the node
// count not above the trays of a rack, so its 64-tray runs get four 16-tray domains
// (NVIDIA-NeMo/Megatron-Bridge scripts/performance/utils/executors.py; hardware.md §1.3).
// nullopt for a GPU without a rack-scale system.
std::optional<int> segment_domain(const std::optional<hw::GpuSystem>& system, int nodes, int per_node) {
    if (!system || per_node != system->gpus_per_node) return std::nullopt;
    int segment = std::min(nodes, system->scale_up_domain / system->gpus_per_node);
    while (nodes % segment != 0) --segment;
    return segment * per_node;
}

// The row's fields as `--set` overrides on its block's base scenario.
std::vector<std::string> overrides(const CsvTable& t, std::size_t r, const std::string& catalog_gpu,
                                   const std::optional<hw::GpuSystem>& system) {
    const auto text = [&](const char* column) -> const std::string& { return t.text(r, column); };
    const auto whole = [&](const char* column) {
        const std::optional<int> v = count(t, r, column);
        if (!v) throw std::runtime_error(fmt::format("column '{}' is empty", column));
        return *v;
    };
    const int gpus = whole("gpus"), per_node = whole("gpus_per_node");
    if (per_node == 0 || gpus % per_node != 0)
        throw std::runtime_error(fmt::format("{} GPUs are not whole nodes of {}", gpus, per_node));
    const int tp = whole("tp"), pp = whole("pp"), dp = whole("dp"), gb = whole("global_batch");
    const int cp = count(t, r, "cp").value_or(1);
    const int chunks = count(t, r, "virtual_stages").value_or(1);
    // Without a stated micro-batch (only where there is no pipeline, missing_features): the
    // gradient accumulation steps when stated, else one micro-batch per step.
    const std::optional<int> stated_mb = count(t, r, "micro_batch");
    const int steps = dp * count(t, r, "grad_accum").value_or(1);
    if (!stated_mb && (steps == 0 || gb % steps != 0))
        throw std::runtime_error(fmt::format("micro_batch not stated and global_batch {} is not a multiple of {}", gb, steps));
    const int mb = stated_mb ? *stated_mb : gb / steps;
    // Megatron-Core's distributed optimizer (ZeRO-1, its reduce-scatter overlapped with the
    // backward): stated by Megatron-Bridge, the default of NeMo's recipes where the field is blank.
    const std::string& sharding = text("distributed_optimizer");
    const bool megatron_core = contains(text("framework"), "NeMo") || contains(text("framework"), "Megatron");
    const bool zero1 = contains(sharding, "distributed optimizer") || (sharding.empty() && megatron_core);
    // PyTorch FSDP (FULL_SHARD, FSDP2), Megatron-FSDP: ZeRO-3 over the whole data-parallel group.
    const bool zero3 = contains(sharding, "FSDP") || contains(sharding, "ZeRO-3");
    // Megatron-Core uses sequence parallelism whenever tensor > 1 (so does torchtitan's TP).
    const bool sp = tp > 1 && !lower(text("sequence_parallel")).starts_with("no");

    std::vector<std::string> sets = {
        "model.layers=" + text("layers"), "model.hidden=" + text("hidden"), "model.heads=" + text("heads"),
        "model.vocab=" + text("vocab"), "model.seq_len=" + text("seq_len"),
        fmt::format("model.swiglu={}", gated_mlp(text("model"))),
        "cluster.gpu=" + catalog_gpu, fmt::format("cluster.nodes={}", gpus / per_node),
        fmt::format("cluster.gpus_per_node={}", per_node),
        fmt::format("parallel.tensor={}", tp), fmt::format("parallel.pipeline={}", pp),
        fmt::format("parallel.data={}", dp),
        // Megatron-Core's context parallelism: Transformer Engine's default p2p (ring) exchange.
        fmt::format("parallel.context={}", cp), "parallel.context_mode=ring",
        // Both count model chunks per pipeline stage (per GPU).
        fmt::format("parallel.virtual_stages={}", chunks),
        fmt::format("parallel.schedule={}", chunks > 1 ? "interleaved" : "1f1b"),
        fmt::format("parallel.sequence_parallel={}", sp), fmt::format("parallel.zero_stage={}", zero3 ? 3 : (zero1 ? 1 : 0)),
        "parallel.dp_overlap=true",
        fmt::format("training.micro_batch={}", mb), fmt::format("training.global_batch={}", gb),
        "training.precision=" + cuboid_precision(text("precision"))};
    if (const auto domain = segment_domain(system, gpus / per_node, per_node))
        sets.push_back(fmt::format("cluster.scale_up_domain={}", *domain));
    if (const auto recipe = fp8_recipe(text("precision"))) sets.push_back("training.fp8_recipe=" + *recipe);
    if (const auto mla = latent_attention(text("kv_heads"))) {  // every head its own keys and values
        sets.insert(sets.end(), mla->begin(), mla->end());
        sets.push_back("model.kv_heads=" + text("heads"));
    }
    else if (!t.empty(r, "kv_heads")) sets.push_back("model.kv_heads=" + text("kv_heads"));
    if (!t.empty(r, "head_dim")) sets.push_back("model.head_dim=" + text("head_dim"));
    if (!t.empty(r, "ffn_hidden")) sets.push_back("model.ffn_hidden=" + text("ffn_hidden"));
    // Mixture of experts: the routed experts, top-k, expert MLP size and shared experts; the
    // row's expert and expert-tensor degrees (blank etp: 1, Megatron-Core's default).
    if (text("moe") == "yes") {
        sets.push_back("model.experts=" + text("experts"));
        sets.push_back("model.experts_per_token=" + text("topk"));
        if (!t.empty(r, "moe_ffn_hidden")) sets.push_back("model.expert_ffn_hidden=" + text("moe_ffn_hidden"));
        sets.push_back(fmt::format("model.shared_experts={}", count(t, r, "shared_experts").value_or(0)));
        sets.push_back(fmt::format("model.dense_layers={}", count(t, r, "dense_layers").value_or(0)));
        sets.push_back(fmt::format("parallel.expert={}", count(t, r, "ep").value_or(1)));
        sets.push_back(fmt::format("parallel.expert_tensor={}", count(t, r, "etp").value_or(1)));
    }
    // DeepSeek-V3's multi-token prediction: one module ("w/ MTP"; its config's num_nextn_predict_layers).
    if (contains(text("model"), "w/ MTP")) sets.push_back("model.mtp_layers=1");
    // The dtype of the gradient buffer and its data-parallel reduction, where the run's recipe
    // states one (blank: the stack's default, fp32 main gradients).
    if (!t.empty(r, "grad_reduce_dtype")) sets.push_back("training.grad_precision=" + text("grad_reduce_dtype"));
    // Blank: the base scenario's (not stated by the source).
    if (!t.empty(r, "recompute")) sets.push_back("parallel.recompute=" + first_word(text("recompute")));
    // The recipe's Megatron-Core recompute_modules under selective recomputation, where stated.
    if (!t.empty(r, "recompute_modules")) sets.push_back("parallel.recompute_modules=" + text("recompute_modules"));
    // The recipe's activation offloading (Megatron-Core cpu_offloading_num_layers), where stated.
    if (!t.empty(r, "activation_offload_layers"))
        sets.push_back("training.activation_offload_layers=" + text("activation_offload_layers"));
    return sets;
}

}  // namespace

double modern_measured_seconds(const CsvTable& t, std::size_t r) {
    const std::string& metric = t.text(r, "measured_metric");
    if (metric != "tokens_per_s_per_gpu")
        throw std::runtime_error("measured_metric '" + metric +
                                 "': only tokens_per_s_per_gpu is converted to an iteration time");
    return t.number(r, "global_batch") * t.number(r, "seq_len") / (t.number(r, "measured_value") * t.number(r, "gpus"));
}

ModernJob modern_job(const CsvTable& t, std::size_t r, const cli::NameResolvers& names, const CheckOptions& options) {
    ModernJob job;
    ModernRow& row = job.row;
    row.check.set = "modern";
    row.check.group = t.text(r, "model");
    row.check.label = t.text(r, "row_id");
    row.block = t.text(r, "block");
    row.precision = t.text(r, "precision");
    row.gpu = first_word(t.text(r, "gpu"));
    try {
        std::string catalog_gpu;
        try {
            catalog_gpu = names.gpu_name(row.gpu);
            row.gpu = catalog_gpu;
        } catch (const std::exception&) {
            // not in the catalog: a missing feature, below
        }
        row.gpus = count(t, r, "gpus").value_or(0);
        row.tokens = t.number(r, "global_batch") * t.number(r, "seq_len");
        const int cp = count(t, r, "cp").value_or(1), ep = count(t, r, "ep").value_or(1);
        row.h100_dense = row.gpu.starts_with("h100") && t.text(r, "moe") != "yes" && cp == 1 && ep == 1;
        row.check.measured_s = modern_measured_seconds(t, r);
        job.needs = missing_features(t, r, catalog_gpu);
        if (job.needs.empty()) {
            job.scenario_path = fmt::format("{}/modern/{}/{}.yaml", options.scenario_dir, row.block, catalog_gpu);
            job.sets = overrides(t, r, catalog_gpu, names.gpu_system ? names.gpu_system(catalog_gpu) : std::nullopt);
        }
    } catch (const std::exception& e) {
        row.check.failure = e.what();
        job.needs.clear();
        return job;
    }
    if (!job.needs.empty()) {
        row.check.expressible = false;
        row.check.failure = fmt::format("{}", fmt::join(job.needs, "; "));
    }
    return job;
}

std::vector<ModernRow> run_modern_rows(const CheckOptions& options) {
    const CsvTable table = CsvTable::read(options.data_dir + "/modern/published_runs.csv");
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    std::vector<ModernRow> rows;
    std::vector<RowJob> jobs;
    std::vector<std::size_t> simulated;  // index in rows of each job
    for (std::size_t r = 0; r < table.rows(); ++r) {
        ModernJob job = modern_job(table, r, names, options);
        if (job.row.check.failure.empty()) {
            simulated.push_back(rows.size());
            jobs.push_back({job.row.check, job.scenario_path, job.sets});
        }
        rows.push_back(std::move(job.row));
    }
    const std::vector<CheckRow> predicted = simulate_rows(jobs, options);
    for (std::size_t i = 0; i < predicted.size(); ++i) rows[simulated[i]].check = predicted[i];
    return rows;
}

}  // namespace cuboid::validate
