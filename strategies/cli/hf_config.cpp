#include "strategies/cli/hf_config.hpp"

#include <algorithm>
#include <climits>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hardware_models/input_file.hpp"
#include "strategies/cli/suggest.hpp"

namespace cuboid::cli {
namespace {

using json = nlohmann::json;

// Real configs nest two or three levels (rope_scaling, task_specific_params); the cap keeps a
// pathological file from building a deep tree.
constexpr int kMaxDepth = 32;

// Where a config family keeps each dimension. The MLP structure (gated or not) and with it the
// norm, biases and output-matrix tying of cuboid's two model styles (strategies/models.yaml)
// follow from the family: the Llama-like families are gated, RMSNorm and untied in cuboid; GPT-2
// and GPT-NeoX are GeLU, LayerNorm and tied.
struct Family {
    std::vector<std::string_view> model_types;
    std::string_view layers, hidden, heads;
    std::string_view kv_heads;      // empty: the family has no grouped-query attention
    std::string_view ffn;
    bool ffn_nullable;              // null (GPT-2's n_inner): 4 * hidden
    std::string_view positions;
    bool gated;                     // cuboid's model.swiglu
    bool ties_by_default;           // transformers' default of tie_word_embeddings for the class
};

const std::vector<Family>& families() {
    static const std::vector<Family> all{
        {{"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3"},
         "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", false,
         "max_position_embeddings", true, false},
        {{"gpt2"}, "n_layer", "n_embd", "n_head", "", "n_inner", true, "n_positions", false, true},
        {{"gpt_neox"}, "num_hidden_layers", "hidden_size", "num_attention_heads", "", "intermediate_size", false,
         "max_position_embeddings", false, false},
    };
    return all;
}

const Family* family_of(std::string_view model_type) {
    for (const auto& f : families())
        if (std::find(f.model_types.begin(), f.model_types.end(), model_type) != f.model_types.end()) return &f;
    return nullptr;
}

// A short rendering of a JSON value for messages.
std::string shown(const json& v) {
    std::string text = v.dump();
    constexpr std::size_t kMax = 40;
    if (text.size() > kMax) text = text.substr(0, kMax) + "...";
    return text;
}

// The fields of one config object, each read with its type checked; errors point at the field.
class ConfigReader {
public:
    ConfigReader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

    [[noreturn]] void fail(std::string_view field, const std::string& message) const {
        throw InputError({file_, 0, field.empty() ? std::string() : "/" + std::string(field)}, message);
    }

    // The value of `field`, or null when absent or written as null. Every field asked for counts
    // as consulted (unread() leaves it out).
    const json* get(std::string_view field) const {
        consulted_.insert(std::string(field));
        const auto it = root_.find(std::string(field));
        return it == root_.end() || it->is_null() ? nullptr : &*it;
    }

    std::optional<int> optional_int(std::string_view field, int min) const {
        const json* v = get(field);
        if (!v) return std::nullopt;
        const auto fail_range = [&] {
            fail(field, fmt::format("expected an integer >= {} (at most {}), got {}", min, INT_MAX, shown(*v)));
        };
        if (v->is_number_unsigned()) {
            const auto u = v->get<std::uint64_t>();
            if (u > static_cast<std::uint64_t>(INT_MAX) || static_cast<int>(u) < min) fail_range();
            return static_cast<int>(u);
        }
        if (!v->is_number_integer()) fail_range();
        const auto i = v->get<std::int64_t>();
        if (i < min || i > INT_MAX) fail_range();
        return static_cast<int>(i);
    }

    int required_int(std::string_view field, std::string_view key) const {
        const auto v = optional_int(field, 1);
        if (!v) fail(field, fmt::format("missing: this field gives {}; an integer >= 1", key));
        return *v;
    }

    std::optional<bool> optional_bool(std::string_view field) const {
        const json* v = get(field);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) fail(field, fmt::format("expected true or false, got {}", shown(*v)));
        return v->get<bool>();
    }

    std::optional<std::string> optional_text(std::string_view field) const {
        const json* v = get(field);
        if (!v) return std::nullopt;
        if (!v->is_string()) fail(field, fmt::format("expected a string, got {}", shown(*v)));
        return v->get<std::string>();
    }

    // The config's fields that no question asked about, in the file's (sorted) order.
    std::vector<std::string> unread() const {
        std::vector<std::string> out;
        for (const auto& item : root_.items())
            if (!consulted_.count(item.key())) out.push_back(item.key());
        return out;
    }

private:
    const json& root_;
    std::string file_;
    mutable std::set<std::string> consulted_;
};

json parse_json(std::string_view text, const std::string& file) {
    const json::parser_callback_t depth_guard = [&](int depth, json::parse_event_t, json&) {
        if (depth > kMaxDepth)
            throw InputError({file, 0, ""}, fmt::format("nested deeper than {} levels; not a config.json", kMaxDepth));
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), depth_guard);
    } catch (const json::exception& e) {
        // e.what() gives the line and column of a syntax error.
        throw InputError({file, 0, ""}, fmt::format("not valid JSON: {}", e.what()));
    }
}

std::string json_kind(const json& v) {
    if (v.is_array()) return "an array";
    if (v.is_string()) return "a string";
    if (v.is_number()) return "a number";
    if (v.is_boolean()) return "a boolean";
    return "null";
}

// A mixture of experts: the routed experts (Mixtral's num_local_experts, Qwen's num_experts,
// DeepSeek's n_routed_experts), top-k, the expert MLP size (moe_intermediate_size; Mixtral's
// experts are intermediate_size wide), shared experts (DeepSeek's count, Qwen2-MoE's size) and
// the leading dense layers (DeepSeek's first_k_dense_replace).
template <class Read>
void read_experts(const ConfigReader& r, ModelSpec& m, Read read) {
    for (const std::string_view field : {"num_local_experts", "num_experts", "n_routed_experts"})
        if (const auto n = r.optional_int(field, 0); n && *n > 1) {
            m.experts = *n;
            read(field, "model.experts");
        }
    if (!m.moe()) return;
    if (const auto k = r.optional_int("num_experts_per_tok", 1)) {
        m.experts_per_token = *k;
        read("num_experts_per_tok", "model.experts_per_token");
    }
    if (const auto ffn = r.optional_int("moe_intermediate_size", 1)) {
        m.expert_ffn_hidden = *ffn;
        read("moe_intermediate_size", "model.expert_ffn_hidden");
    }
    if (const auto shared = r.optional_int("n_shared_experts", 0)) {
        m.shared_experts = *shared;
        read("n_shared_experts", "model.shared_experts");
    } else if (const auto size = r.optional_int("shared_expert_intermediate_size", 1);
               size && *size % m.expert_ffn_or_default() == 0) {
        m.shared_experts = *size / m.expert_ffn_or_default();
        read("shared_expert_intermediate_size", "model.shared_experts");
    }
    if (const auto dense = r.optional_int("first_k_dense_replace", 0)) {
        m.dense_layers = *dense;
        read("first_k_dense_replace", "model.dense_layers");
    }
}

// DeepSeek's multi-head latent attention (kv_lora_rank given): its five widths. Queries projected
// without a latent (q_lora_rank null, DeepSeek-V2-Lite) are not modelled.
template <class Read>
void read_latent_attention(const ConfigReader& r, ModelSpec& m, Read read) {
    const auto kv_lora = r.optional_int("kv_lora_rank", 1);
    if (!kv_lora) return;
    const auto q_lora = r.optional_int("q_lora_rank", 1);
    if (!q_lora)
        r.fail("q_lora_rank", "null or missing: queries projected without a latent (DeepSeek-V2-Lite) are not modelled; "
                              "cuboid's multi-head latent attention needs a query latent (model.q_lora_rank)");
    m.attention_kind = AttentionKind::Mla;
    read("kv_lora_rank", "model.attention_kind");
    m.kv_lora_rank = *kv_lora;
    read("kv_lora_rank", "model.kv_lora_rank");
    m.q_lora_rank = *q_lora;
    read("q_lora_rank", "model.q_lora_rank");
    m.qk_nope_head_dim = r.required_int("qk_nope_head_dim", "model.qk_nope_head_dim");
    read("qk_nope_head_dim", "model.qk_nope_head_dim");
    m.qk_rope_head_dim = r.required_int("qk_rope_head_dim", "model.qk_rope_head_dim");
    read("qk_rope_head_dim", "model.qk_rope_head_dim");
    m.v_head_dim = r.required_int("v_head_dim", "model.v_head_dim");
    read("v_head_dim", "model.v_head_dim");
    m.kv_heads = 0;  // every head has its own keys and values
    m.head_dim = 0;
}

// DeepSeek-V3's multi-token prediction modules.
template <class Read>
void read_multi_token_prediction(const ConfigReader& r, ModelSpec& m, Read read) {
    if (const auto mtp = r.optional_int("num_nextn_predict_layers", 0)) {
        m.mtp_layers = *mtp;
        read("num_nextn_predict_layers", "model.mtp_layers");
    }
}

// Refuses what would change the FLOPs or the memory in a way cuboid does not model, naming every
// such field at once as not mapped (the first one is the error's location), and what was mapped.
void refuse_unmodelled(const ConfigReader& r, const ModelSpec& m, const ModelImport& record) {
    std::vector<std::string> parts;
    std::string first;
    const auto refuse = [&](std::string_view field, std::string why) {
        parts.push_back(std::move(why));
        if (first.empty()) first = field;
    };
    // Mixtures of experts are read (read_experts), except layouts cuboid's keys cannot say: sparse
    // layers every n-th layer or on a list, shared experts not a whole number of experts.
    if (m.moe()) {
        if (const auto step = r.optional_int("decoder_sparse_step", 1); step && *step != 1)
            refuse("decoder_sparse_step", fmt::format("decoder_sparse_step = {}: experts every {} layers; cuboid's "
                                                      "expert layers follow the first model.dense_layers",
                                                      *step, *step));
        if (const json* only = r.get("mlp_only_layers"); only && only->is_array() && !only->empty())
            refuse("mlp_only_layers", "mlp_only_layers not empty: dense layers between expert layers");
        if (const auto shared = r.optional_int("shared_expert_intermediate_size", 1);
            shared && *shared % m.expert_ffn_or_default() != 0)
            refuse("shared_expert_intermediate_size",
                   fmt::format("shared_expert_intermediate_size = {}: not a multiple of the expert MLP size {} "
                               "(model.shared_experts counts whole experts)",
                               *shared, m.expert_ffn_or_default()));
    }
    if (parts.empty()) return;
    std::string why;
    for (const std::string& part : parts) why += (why.empty() ? "" : "; ") + part;
    std::vector<std::string> mapped;
    for (const auto& [field, key] : record.fields_read) mapped.push_back(field + " -> " + key);
    r.fail(first, fmt::format("cannot be modelled, not mapped: {}; mapped: {}", why, join(mapped)));
}

// Fields cuboid reads but only approximates: named in the report, not refused.
std::vector<std::string> approximation_notes(const ConfigReader& r, const Family& f, const ModelSpec& m) {
    std::vector<std::string> notes;
    const auto window = r.optional_int("sliding_window", 1);
    if (window && r.optional_bool("use_sliding_window").value_or(true))
        notes.push_back(fmt::format("sliding_window {0}: attention is priced over the whole sequence, more than the "
                                    "model computes when model.seq_len > {0}",
                                    *window));
    const bool tied = r.optional_bool("tie_word_embeddings").value_or(f.ties_by_default);
    const double output_weights_m = static_cast<double>(m.vocab) * m.hidden / 1e6;
    if (tied && f.gated)
        notes.push_back(fmt::format("tie_word_embeddings true: cuboid's gated-MLP models keep a separate output "
                                    "matrix, so its {:.0f} M weights are counted twice in memory (FLOPs unchanged)",
                                    output_weights_m));
    if (!tied && !f.gated)
        notes.push_back(fmt::format("tie_word_embeddings false: cuboid's GeLU models share the output matrix with the "
                                    "embedding, so its {:.0f} M weights are left out of memory (FLOPs unchanged)",
                                    output_weights_m));
    return notes;
}

}  // namespace

std::vector<std::string> hf_model_types() {
    std::vector<std::string> out;
    for (const auto& f : families())
        for (const auto t : f.model_types) out.emplace_back(t);
    return out;
}

ModelSpec import_hf_config(std::string_view json_text, const std::string& file) {
    const json root = parse_json(json_text, file);
    if (!root.is_object())
        throw InputError({file, 0, ""}, fmt::format("expected a JSON object (a Hugging Face config.json), got {}",
                                                    json_kind(root)));
    const ConfigReader r(root, file);
    const auto model_type = r.optional_text("model_type");
    if (!model_type) r.fail("model_type", "missing: the config's model family, one of " + join(hf_model_types()));
    const Family* f = family_of(*model_type);
    if (!f) r.fail("model_type", unknown_name_message("model_type", *model_type, hf_model_types()));

    ModelImport record;
    record.path = file;
    record.model_type = *model_type;
    if (const json* arch = r.get("architectures"); arch && arch->is_array() && !arch->empty() &&
                                                   arch->front().is_string())
        record.architecture = arch->front().get<std::string>();
    const auto read = [&](std::string_view field, std::string_view key) {
        record.fields_read.emplace_back(field, key);
    };

    ModelSpec m;
    m.layers = r.required_int(f->layers, "model.layers");
    read(f->layers, "model.layers");
    m.hidden = r.required_int(f->hidden, "model.hidden");
    read(f->hidden, "model.hidden");
    m.heads = r.required_int(f->heads, "model.heads");
    read(f->heads, "model.heads");
    // A head size of its own (Qwen3: 128 with hidden / heads = 64); kept only where it differs, so
    // that a config stating hidden / heads gives exactly the preset's shape.
    if (const auto head_dim = r.optional_int("head_dim", 1)) {
        if (static_cast<long long>(*head_dim) * m.heads != m.hidden) m.head_dim = *head_dim;
        read("head_dim", "model.head_dim");
    }
    if (!f->kv_heads.empty())
        if (const auto kv = r.optional_int(f->kv_heads, 1)) {
            m.kv_heads = *kv;
            read(f->kv_heads, "model.kv_heads");
        }
    if (f->ffn_nullable) {
        if (const auto ffn = r.optional_int(f->ffn, 1)) m.ffn_hidden = *ffn;
    } else {
        m.ffn_hidden = r.required_int(f->ffn, "model.ffn_hidden");
    }
    read(f->ffn, "model.ffn_hidden");
    m.vocab = r.required_int("vocab_size", "model.vocab");
    read("vocab_size", "model.vocab");
    // The longest sequence the model was built for; a model.seq_len in the scenario wins.
    if (const auto positions = r.optional_int(f->positions, 1)) {
        m.seq_len = *positions;
        read(f->positions, "model.seq_len");
    }
    m.swiglu = f->gated;
    read("model_type", "model.swiglu");

    read_experts(r, m, read);
    read_latent_attention(r, m, read);
    read_multi_token_prediction(r, m, read);
    if (m.mla())  // its key/value heads and head size are the latent widths, not these keys
        std::erase_if(record.fields_read, [](const auto& f) { return f.second == "model.kv_heads" || f.second == "model.head_dim"; });
    refuse_unmodelled(r, m, record);
    record.notes = approximation_notes(r, *f, m);
    // Asked last, so that every field the checks above consulted counts as read.
    record.fields_not_read = r.unread();
    m.imported = std::move(record);
    return m;
}

ModelSpec import_hf_config_file(const std::string& path) {
    return import_hf_config(read_input_file(path, kMaxHfConfigBytes, "Hugging Face config"), path);
}

}  // namespace cuboid::cli
