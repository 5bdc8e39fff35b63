// model.hf_config: published Hugging Face configs (tests/cli/data/hf_configs, sources in
// SOURCES.md) map onto cuboid's model keys; what cuboid cannot model is refused naming the field;
// bad JSON, wrong types and missing fields are input errors at the field's JSON pointer; the
// scenario's own model keys win over the imported ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/hf_config.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/text_report.hpp"
#include "strategies/model_presets.hpp"
#include "strategies/run.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(CUBOID_SOURCE_DIR) / "tests/cli/data/hf_configs";

// layers, hidden, heads, kv_heads, ffn_hidden, seq_len, vocab, swiglu
using Shape = std::tuple<int, int, int, int, int, int, int, bool>;

Shape shape_of(const ModelSpec& m) {
    return {m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.seq_len, m.vocab, m.swiglu};
}

ModelSpec published(const std::string& name) { return import_hf_config_file((kConfigs / name).string()); }

InputError import_error(const std::string& json) {
    return input_error_of([&] { import_hf_config(json, "c.json"); });
}

// A dense Llama-style config with one field replaced (or added) by `field: value`.
std::string llama_with(const std::string& field, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256,
        "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000})");
    j[field] = nlohmann::json::parse(value);
    return j.dump();
}

// The small Llama config with the fields of a JSON object added.
std::string llama_with_all(const std::string& fields) {
    nlohmann::json j = nlohmann::json::parse(llama_with("model_type", "\"llama\""));
    j.update(nlohmann::json::parse(fields));
    return j.dump();
}

bool has_note(const ModelSpec& m, const std::string& part) {
    for (const auto& n : m.imported->notes)
        if (contains(n, part)) return true;
    return false;
}

// A scenario file next to the configs' copies, so that a relative hf_config resolves from its folder.
std::string scenario_in(const std::filesystem::path& dir, const std::string& model_section) {
    std::filesystem::create_directories(dir);
    for (const auto& e : std::filesystem::directory_iterator(kConfigs))
        std::filesystem::copy_file(e.path(), dir / e.path().filename(),
                                   std::filesystem::copy_options::overwrite_existing);
    const auto file = dir / "s.yaml";
    std::ofstream(file) << "model:\n" << model_section
                        << "cluster:\n  gpu: h100-sxm-80gb\n  nodes: 1\nparallel:\n  tensor: 4\n  pipeline: 2\n"
                           "training:\n  global_batch: 16\n";
    return file.string();
}

std::filesystem::path temp_dir(const std::string& name) {
    return cuboid::scratch::file("cuboid_hf_config_test_" + name);
}

}  // namespace

TEST_CASE("Meta-Llama-3-8B's published config has exactly the llama3-8b preset's shape", "[cli][hf_config]") {
    const ModelSpec imported = published("meta-llama-3-8b.json");
    ModelSpec preset;
    apply_preset("llama3-8b", preset);
    CHECK(shape_of(imported) == Shape{32, 4096, 32, 8, 14336, 8192, 128256, true});
    CHECK(shape_of(imported) == shape_of(preset));
    REQUIRE(imported.imported);
    CHECK(imported.imported->model_type == "llama");
    CHECK(imported.imported->architecture == "LlamaForCausalLM");
    CHECK(imported.imported->notes.empty());  // untied, no window: nothing approximated
    CHECK(imported.imported->fields_read.size() == 8);
    CHECK(imported.imported->fields_read.front() ==
          std::pair<std::string, std::string>{"num_hidden_layers", "model.layers"});
    // Every other field of the file is named as not read; none that was read or checked is.
    const auto& unread = imported.imported->fields_not_read;
    for (const char* field : {"rope_theta", "rope_scaling", "rms_norm_eps", "bos_token_id", "torch_dtype", "hidden_act"})
        CHECK(std::find(unread.begin(), unread.end(), field) != unread.end());
    for (const char* field : {"hidden_size", "num_key_value_heads", "model_type", "tie_word_embeddings", "architectures"})
        CHECK(std::find(unread.begin(), unread.end(), field) == unread.end());
    std::ifstream file(kConfigs / "meta-llama-3-8b.json");
    const auto fields = nlohmann::json::parse(file).size();
    // read (8) + checked only (architectures, tie_word_embeddings) + not read = every field.
    CHECK(unread.size() + imported.imported->fields_read.size() + 2 == fields);
}

TEST_CASE("cuboid run with Llama-3-8B's config gives the llama3-8b preset's fingerprint", "[cli][hf_config]") {
    const auto names = builtin_name_resolvers();
    const auto dir = temp_dir("fingerprint");
    const Scenario by_config = load_scenario_file(scenario_in(dir, "  hf_config: meta-llama-3-8b.json\n"), names);
    const Scenario by_preset = load_scenario_file(scenario_in(dir, "  preset: llama3-8b\n"), names);
    const RunResult a = run_scenario(by_config);
    const RunResult b = run_scenario(by_preset);
    CHECK(a.fingerprint == b.fingerprint);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    // And a different config gives a different program.
    const Scenario mistral = load_scenario_file(scenario_in(dir, "  hf_config: mistral-7b-v0.1.json\n"
                                                                 "  seq_len: 8192\n"), names);
    CHECK(run_scenario(mistral).fingerprint != a.fingerprint);
    std::filesystem::remove_all(dir);
}

TEST_CASE("GPT-2's field names map, with the GeLU MLP and 4 h when n_inner is null", "[cli][hf_config]") {
    const ModelSpec m = published("gpt2.json");
    // kv_heads 0: same as heads; ffn_hidden 0: 4 x hidden; seq_len from n_positions.
    CHECK(shape_of(m) == Shape{12, 768, 12, 0, 0, 1024, 50257, false});
    CHECK(m.ffn_or_default() == 4 * 768);
    CHECK(m.imported->notes.empty());  // GPT-2 ties its embeddings, as cuboid's GeLU models do
    // n_inner given: the MLP size.
    const ModelSpec inner = import_hf_config(
        R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_inner": 100, "vocab_size": 50})",
        "g.json");
    CHECK(inner.ffn_hidden == 100);
    CHECK(inner.seq_len == 0);  // no n_positions: the scenario must give model.seq_len
}

TEST_CASE("GPT-NeoX maps as GeLU and names its untied output matrix", "[cli][hf_config]") {
    const ModelSpec m = import_hf_config(R"({"model_type": "gpt_neox", "num_hidden_layers": 44, "hidden_size": 6144,
        "num_attention_heads": 64, "intermediate_size": 24576, "vocab_size": 50432, "max_position_embeddings": 2048,
        "hidden_act": "gelu", "tie_word_embeddings": false, "rotary_pct": 0.25, "use_parallel_residual": true})",
                                         "neox.json");
    CHECK(m.layers == 44);
    CHECK(m.ffn_hidden == 24576);
    CHECK_FALSE(m.swiglu);
    CHECK(has_note(m, "tie_word_embeddings false"));
    CHECK(has_note(m, "310 M weights"));  // 50432 x 6144
}

TEST_CASE("Qwen2.5-0.5B: grouped-query heads, tied embeddings noted, an inactive window not", "[cli][hf_config]") {
    const ModelSpec m = published("qwen2.5-0.5b.json");
    CHECK(shape_of(m) == Shape{24, 896, 14, 2, 4864, 32768, 151936, true});
    REQUIRE(m.imported->notes.size() == 1);
    CHECK(has_note(m, "tie_word_embeddings true"));
    CHECK(has_note(m, "136 M weights"));  // 151936 x 896
}

TEST_CASE("Mistral-7B's active sliding window is named", "[cli][hf_config]") {
    const ModelSpec m = published("mistral-7b-v0.1.json");
    CHECK(m.seq_len == 32768);
    REQUIRE(m.imported->notes.size() == 1);
    CHECK(has_note(m, "sliding_window 4096"));
}

TEST_CASE("a mixture of experts is read: experts, top-k, expert size, shared experts, dense layers",
          "[cli][hf_config]") {
    // Mixtral: 8 experts of intermediate_size, top-2.
    const ModelSpec mixtral = published("mixtral-8x7b-v0.1.json");
    CHECK(mixtral.experts == 8);
    CHECK(mixtral.top_k() == 2);
    CHECK(mixtral.expert_ffn_or_default() == 14336);
    CHECK(mixtral.shared_experts == 0);
    // A DeepSeek-V2-like shape without MLA: routed and shared experts, the first dense layer.
    const ModelSpec deepseek = import_hf_config(
        R"({"model_type": "deepseek_v2", "num_hidden_layers": 27, "hidden_size": 2048, "num_attention_heads": 16,
        "intermediate_size": 10944, "vocab_size": 102400, "n_routed_experts": 64, "num_experts_per_tok": 6,
        "moe_intermediate_size": 1408, "n_shared_experts": 2, "first_k_dense_replace": 1})",
        "c.json");
    CHECK(deepseek.experts == 64);
    CHECK(deepseek.top_k() == 6);
    CHECK(deepseek.expert_ffn_hidden == 1408);
    CHECK(deepseek.shared_experts == 2);
    CHECK(deepseek.dense_layers == 1);
    CHECK(deepseek.ffn_hidden == 10944);  // the dense layer's MLP
    // Qwen2-MoE: the shared expert by its size, a multiple of the expert size.
    const ModelSpec qwen = import_hf_config(
        llama_with_all(R"({"num_experts": 60, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632})"),
        "c.json");
    CHECK(qwen.experts == 60);
    CHECK(qwen.shared_experts == 4);
}

TEST_CASE("DeepSeek-V3's config imports with its latent attention and multi-token prediction", "[cli][hf_config]") {
    // The shape fields of deepseek-ai/DeepSeek-V3's config.json (its MoE, MLA and multi-token
    // prediction fields as published).
    const std::string deepseek_v3 = R"({"model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
        "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc",
        "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5,
        "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "num_nextn_predict_layers": 1, "rope_theta": 10000})";
    const ModelSpec m = import_hf_config(deepseek_v3, "c.json");
    CHECK(m.experts == 256);
    CHECK(m.dense_layers == 3);
    CHECK(m.mtp_layers == 1);
    CHECK(m.mla());
    CHECK(m.q_lora_rank == 1536);
    CHECK(m.kv_lora_rank == 512);
    CHECK(m.qk_nope_head_dim == 128);
    CHECK(m.qk_rope_head_dim == 64);
    CHECK(m.v_head_dim == 128);
    CHECK(m.kv_heads == 0);
    CHECK(m.head_dim_or_default() == 192);
    REQUIRE(m.imported);
    const auto& read = m.imported->fields_read;
    const auto mapped = [&](const std::string& field, const std::string& key) {
        return std::find(read.begin(), read.end(), std::pair<std::string, std::string>{field, key}) != read.end();
    };
    CHECK(mapped("num_nextn_predict_layers", "model.mtp_layers"));
    CHECK(mapped("q_lora_rank", "model.q_lora_rank"));
    CHECK_FALSE(mapped("num_key_value_heads", "model.kv_heads"));  // latent attention: every head its own
    // Queries without a latent (DeepSeek-V2-Lite: q_lora_rank null) are refused at the field.
    std::string lite = deepseek_v3;
    const std::string q_latent = "\"q_lora_rank\": 1536";
    lite.replace(lite.find(q_latent), q_latent.size(), "\"q_lora_rank\": null");
    const auto no_query_latent = import_error(lite);
    CHECK(no_query_latent.where().key == "/q_lora_rank");
    CHECK(contains(no_query_latent.what(), "DeepSeek-V2-Lite"));
}

TEST_CASE("what cuboid cannot model is refused, naming the field", "[cli][hf_config]") {
    // Experts every second layer, and a shared expert of part of an expert.
    const auto sparse_step = import_error(llama_with_all(R"({"num_experts": 60, "decoder_sparse_step": 2})"));
    CHECK(sparse_step.where().key == "/decoder_sparse_step");
    const auto shared = import_error(
        llama_with_all(R"({"num_experts": 60, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 1000})"));
    CHECK(shared.where().key == "/shared_expert_intermediate_size");
}

TEST_CASE("a head size other than hidden / heads is read as model.head_dim", "[cli][hf_config]") {
    // The shape fields of Qwen/Qwen3-30B-A3B's config.json: 32 heads of 128 on a hidden size of 2048.
    const ModelSpec qwen3 = import_hf_config(
        R"({"model_type": "qwen3_moe", "num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 32,
        "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936,
        "max_position_embeddings": 40960, "num_experts": 128, "num_experts_per_tok": 8,
        "moe_intermediate_size": 768, "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": false})",
        "c.json");
    CHECK(qwen3.head_dim == 128);
    CHECK(qwen3.head_dim_or_default() == 128);
    CHECK(qwen3.attention_width_differs());
    const auto& read = qwen3.imported->fields_read;
    CHECK(std::find(read.begin(), read.end(), std::pair<std::string, std::string>{"head_dim", "model.head_dim"}) !=
          read.end());
    // Stated as hidden / heads, it changes nothing: the shape stays the preset's (head_dim 0).
    const ModelSpec same = import_hf_config(llama_with("head_dim", "64"), "c.json");  // = 256 / 4
    CHECK(same.head_dim == 0);
    CHECK(same.head_dim_or_default() == 64);
}

TEST_CASE("fields that do not change the shape are accepted", "[cli][hf_config]") {
    CHECK_NOTHROW(import_hf_config(llama_with("num_local_experts", "1"), "c.json"));
    CHECK_NOTHROW(import_hf_config(llama_with("n_routed_experts", "null"), "c.json"));
    CHECK_NOTHROW(import_hf_config(llama_with("kv_lora_rank", "null"), "c.json"));
    const ModelSpec m = import_hf_config(llama_with("rope_scaling", R"({"factor": 8.0, "rope_type": "llama3"})"), "c.json");
    CHECK(m.imported->notes.empty());
}

TEST_CASE("bad config text is an input error at the file and the field's JSON pointer", "[cli][hf_config]") {
    const auto syntax = import_error("{\"model_type\": \"llama\",\n  \"hidden_size\": }");
    CHECK(syntax.where().file == "c.json");
    CHECK(contains(syntax.what(), "not valid JSON"));
    CHECK(contains(syntax.what(), "line 2"));

    CHECK(contains(import_error("[1, 2]").what(), "expected a JSON object (a Hugging Face config.json), got an array"));
    CHECK(contains(import_error("\"llama\"").what(), "got a string"));
    CHECK(contains(import_error("").what(), "not valid JSON"));

    const auto no_type = import_error(R"({"hidden_size": 4096})");
    CHECK(no_type.where().key == "/model_type");
    CHECK(contains(no_type.what(), "missing"));

    const auto typo = import_error(R"({"model_type": "lama"})");
    CHECK(typo.where().key == "/model_type");
    CHECK(contains(typo.what(), "did you mean 'llama'?"));
    CHECK(import_error(R"({"model_type": 7})").where().key == "/model_type");

    const auto text_int = import_error(llama_with("hidden_size", "\"4096\""));
    CHECK(text_int.where().key == "/hidden_size");
    CHECK(contains(text_int.what(), "expected an integer >= 1"));
    CHECK(contains(text_int.what(), "\"4096\""));
    CHECK(import_error(llama_with("hidden_size", "4096.5")).where().key == "/hidden_size");
    CHECK(import_error(llama_with("num_hidden_layers", "0")).where().key == "/num_hidden_layers");
    CHECK(import_error(llama_with("num_hidden_layers", "-3")).where().key == "/num_hidden_layers");
    CHECK(import_error(llama_with("vocab_size", "3000000000")).where().key == "/vocab_size");
    CHECK(import_error(llama_with("num_key_value_heads", "[8]")).where().key == "/num_key_value_heads");
    CHECK(import_error(llama_with("tie_word_embeddings", "\"yes\"")).where().key == "/tie_word_embeddings");
    CHECK(import_error(llama_with("sliding_window", "true")).where().key == "/sliding_window");
    CHECK(import_error(llama_with("num_local_experts", "\"8\"")).where().key == "/num_local_experts");

    const auto missing = import_error(R"({"model_type": "llama", "num_hidden_layers": 2})");
    CHECK(missing.where().key == "/hidden_size");
    CHECK(contains(missing.what(), "model.hidden"));

    std::string deep(100, '[');
    deep += std::string(100, ']');
    CHECK(contains(import_error(deep).what(), "nested deeper than"));
}

TEST_CASE("model.hf_config in a scenario: relative to its folder, overridden by the model keys written",
          "[cli][hf_config][loader]") {
    const auto names = builtin_name_resolvers();
    const auto dir = temp_dir("loader");
    // seq_len written before the import, still wins over max_position_embeddings (32768).
    const Scenario s = load_scenario_file(
        scenario_in(dir, "  seq_len: 4096\n  hf_config: mistral-7b-v0.1.json\n  layers: 8\n"), names);
    CHECK(s.model.seq_len == 4096);
    CHECK(s.model.layers == 8);
    CHECK(s.model.hidden == 4096);  // imported
    REQUIRE(s.model.imported);
    CHECK(s.model.imported->path == (dir / "mistral-7b-v0.1.json").lexically_normal().string());

    // The scenario's location comes first, then the config's own.
    const std::string moe = scenario_in(dir, "  hf_config: mixtral-8x7b-v0.1.json\n  experts_per_token: 1\n");
    const Scenario mixtral = load_scenario_file(moe, names);
    CHECK(mixtral.model.experts == 8);
    CHECK(mixtral.model.top_k() == 1);  // the key written wins over num_experts_per_tok
    const std::string deep_bad = scenario_in(dir, "  hf_config: bad-moe.json\n");
    {
        std::ofstream(dir / "bad-moe.json") << llama_with_all(R"({"num_experts": 60, "decoder_sparse_step": 2})");
    }
    const auto e = input_error_of([&] { load_scenario_file(deep_bad, names); });
    check_located(e, deep_bad, 2, "model.hf_config");
    CHECK(contains(e.what(), "bad-moe.json: '/decoder_sparse_step'"));

    const std::string absent = scenario_in(dir, "  hf_config: none.json\n");
    check_located(input_error_of([&] { load_scenario_file(absent, names); }), absent, 2, "model.hf_config");

    const std::string both = scenario_in(dir, "  preset: llama3-8b\n  hf_config: gpt2.json\n");
    const auto two = input_error_of([&] { load_scenario_file(both, names); });
    check_located(two, both, 3, "model.hf_config");
    CHECK(contains(two.what(), "keep one of the two"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("a --set model.hf_config replaces the model before the other --set model keys", "[cli][hf_config][set]") {
    const auto names = builtin_name_resolvers();
    const auto dir = temp_dir("set");
    Scenario s = load_scenario_file(scenario_in(dir, "  preset: llama3-70b\n"), names);
    const std::vector<std::string> sets{"model.layers=3", "model.hf_config=" + (dir / "gpt2.json").string()};
    apply_overrides(s, sets, names);
    CHECK(s.model.layers == 3);
    CHECK(s.model.hidden == 768);
    CHECK(s.model.preset.empty());
    // A preset after the import replaces it, record included.
    apply_overrides(s, std::vector<std::string>{"model.preset=llama3-8b"}, names);
    CHECK_FALSE(s.model.imported);
    std::filesystem::remove_all(dir);
}

TEST_CASE("the report and the JSON show the config fields read and the notes", "[cli][hf_config][output]") {
    const auto names = builtin_name_resolvers();
    const auto dir = temp_dir("output");
    const Scenario s =
        load_scenario_file(scenario_in(dir, "  hf_config: mistral-7b-v0.1.json\n  seq_len: 4096\n"), names);
    const RunResult r = run_scenario(s);
    const auto j = result_json(s, r);
    REQUIRE(j.contains("model_import"));
    CHECK(j["model_import"]["model_type"] == "mistral");
    CHECK(j["model_import"]["architecture"] == "MistralForCausalLM");
    CHECK(j["model_import"]["fields_read"]["num_key_value_heads"] == "model.kv_heads");
    CHECK(j["model_import"]["fields_read"]["max_position_embeddings"] == "model.seq_len");
    CHECK(j["model_import"]["notes"].size() == 1);
    const auto& unread = j["model_import"]["fields_not_read"];
    CHECK(std::find(unread.begin(), unread.end(), "rope_theta") != unread.end());
    CHECK(std::find(unread.begin(), unread.end(), "sliding_window") == unread.end());  // read: it has a note
    std::ostringstream report;
    write_report(report, s, r);
    CHECK(contains(report.str(), "(mistral, MistralForCausalLM): 32 layers"));
    CHECK(contains(report.str(), "num_key_value_heads -> model.kv_heads"));
    CHECK(contains(report.str(), "note      sliding_window 4096"));
    CHECK(contains(report.str(), "\nnot read  "));
    CHECK(contains(report.str(), "rope_theta"));
    // A preset's run has no import record.
    const Scenario p = load_scenario_file(scenario_in(dir, "  preset: llama3-8b\n"), names);
    CHECK_FALSE(result_json(p, run_scenario(p)).contains("model_import"));
    std::filesystem::remove_all(dir);
}
