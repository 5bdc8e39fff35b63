// The `modern` set of cuboid-published-check (validate/published/modern_rows.hpp): the CSV loads,
// every row is simulated or says what it needs, reasons follow from the row's fields, and the
// measured throughput converts to the iteration time it implies.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "hardware_models/errors.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/layout.hpp"
#include "validate/published/modern_rows.hpp"
#include "validate/published/modern_summary.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::validate;

namespace {

const std::string kCsv = "validate/data/modern/published_runs.csv";

std::size_t row_of(const CsvTable& t, const std::string& id) {
    for (std::size_t r = 0; r < t.rows(); ++r)
        if (t.text(r, "row_id") == id) return r;
    FAIL("no row " << id);
    return 0;
}

bool has(const std::vector<std::string>& sets, const std::string& assignment) {
    return std::find(sets.begin(), sets.end(), assignment) != sets.end();
}

}  // namespace

TEST_CASE("modern: a row's throughput converts to its iteration time", "[validate][modern]") {
    const CsvTable t = CsvTable::read(kCsv);
    // GPT-3 175B on 128 H100s (NeMo 24.07): 726 tokens/s per GPU, global batch 256 of 2048 tokens:
    // 256 * 2048 / (726 * 128) = 524288 / 92928 = 5.64187 s.
    CHECK(modern_measured_seconds(t, row_of(t, "nemo2407-gpt3-175b-128")) == Approx(5.64187).epsilon(1e-5));

    const auto path = cuboid::scratch::file("cuboid_modern_metric.csv");
    {
        std::ofstream out(path);
        out << "row_id,measured_metric,measured_value,global_batch,seq_len,gpus\nx,mfu,0.4,8,2048,8\n";
    }
    const CsvTable other = CsvTable::read(path.string());
    CHECK_THROWS_WITH(modern_measured_seconds(other, 0), Catch::Contains("only tokens_per_s_per_gpu"));
    std::filesystem::remove(path);
}

// Every row either names what it needs or becomes a scenario that loads and passes the plan
// checks. Simulating the rows is cuboid-published-check's job (the published_check_modern test,
// which fails on any expressible row that does not run); here nothing is simulated, so that the
// checked build's unit tests stay quick.
TEST_CASE("modern: every row becomes a valid plan or names what it needs", "[validate][modern]") {
    const CsvTable t = CsvTable::read(kCsv);
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    CheckOptions options;
    int expressible = 0;
    for (std::size_t r = 0; r < t.rows(); ++r) {
        const ModernJob job = modern_job(t, r, names, options);
        INFO(job.row.check.label << ": " << job.row.check.failure);
        CHECK(job.row.check.measured_s > 0);
        if (!job.row.check.expressible) {
            CHECK_FALSE(job.needs.empty());  // what it needs, named
            continue;
        }
        ++expressible;
        REQUIRE(job.row.check.failure.empty());  // a field that does not convert
        Scenario scenario = cli::load_scenario_file(job.scenario_path, names);
        cli::apply_overrides(scenario, job.sets, names);
        CHECK_NOTHROW(cli::check_complete(scenario));
        CHECK_NOTHROW(validate_plan(scenario));
    }
    CHECK(expressible > 0);
}

TEST_CASE("modern: reasons and overrides follow from the row's fields", "[validate][modern]") {
    const CsvTable t = CsvTable::read(kCsv);
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    const CheckOptions options;
    for (std::size_t r = 0; r < t.rows(); ++r) {
        const ModernJob job = modern_job(t, r, names, options);
        INFO(t.text(r, "row_id"));
        const auto needs = [&](const std::string& what) { return Catch::Contains(what).match(job.row.check.failure); };
        const std::string cp = t.empty(r, "cp") ? "1" : t.text(r, "cp");
        CHECK_FALSE(needs("context parallelism"));  // modelled: parallel.context
        CHECK_FALSE(needs("mixture of experts"));  // modelled: model.experts, parallel.expert
        CHECK_FALSE(needs("latent attention"));  // modelled: model.attention_kind: mla
        CHECK_FALSE(needs("multi-token prediction"));  // modelled: model.mtp_layers
        CHECK_FALSE(needs("MXFP8"));  // modelled: training.fp8_recipe
        if (!job.needs.empty()) continue;
        // Transformer Engine's recipe as the row states it (plain fp8: the base scenario's).
        const std::string precision = t.text(r, "precision");
        if (precision == "fp8-cs") CHECK(has(job.sets, "training.fp8_recipe=current"));
        if (precision == "fp8-mx") CHECK(has(job.sets, "training.fp8_recipe=mxfp8"));
        // Expressible: the base scenario of its block and GPU, the row's plan on top.
        CHECK(std::filesystem::exists(job.scenario_path));
        CHECK(has(job.sets, "parallel.tensor=" + t.text(r, "tp")));
        CHECK(has(job.sets, "parallel.context=" + cp));
        const bool interleaved = !t.empty(r, "virtual_stages") && t.number(r, "virtual_stages") > 1;
        CHECK(has(job.sets, std::string("parallel.schedule=") + (interleaved ? "interleaved" : "1f1b")));
        CHECK(has(job.sets, "parallel.virtual_stages=" + (interleaved ? t.text(r, "virtual_stages") : "1")));
        CHECK(has(job.sets, std::string("parallel.sequence_parallel=") + (t.number(r, "tp") > 1 ? "true" : "false")));
        // FSDP (PyTorch's FULL_SHARD / FSDP2, Megatron-FSDP) is ZeRO-3.
        const bool fsdp = Catch::Contains("FSDP").match(t.text(r, "distributed_optimizer"));
        if (fsdp) CHECK(has(job.sets, "parallel.zero_stage=3"));
        else CHECK_FALSE(has(job.sets, "parallel.zero_stage=3"));
        // DeepSeek's latent attention as the kv_heads column writes it: its five widths.
        if (Catch::Contains("MLA (").match(t.text(r, "kv_heads"))) {
            CHECK(has(job.sets, "model.attention_kind=mla"));
            CHECK(has(job.sets, "model.kv_lora_rank=512"));
            CHECK(has(job.sets, "model.q_lora_rank=1536"));
            CHECK(has(job.sets, "model.qk_nope_head_dim=128"));
            CHECK(has(job.sets, "model.qk_rope_head_dim=64"));
            CHECK(has(job.sets, "model.v_head_dim=128"));
            CHECK(has(job.sets, "model.dense_layers=3"));
        }
        // A gradient dtype the recipe states sets the gradient precision; blank keeps the default.
        if (t.empty(r, "grad_reduce_dtype")) CHECK_FALSE(has(job.sets, "training.grad_precision=bf16"));
        else CHECK(has(job.sets, "training.grad_precision=" + t.text(r, "grad_reduce_dtype")));
        const bool mtp = Catch::Contains("w/ MTP").match(t.text(r, "model"));
        CHECK(has(job.sets, "model.mtp_layers=1") == mtp);
        // A mixture of experts: its experts and the row's expert degrees.
        if (t.text(r, "moe") == "yes") {
            CHECK(has(job.sets, "model.experts=" + t.text(r, "experts")));
            CHECK(has(job.sets, "model.experts_per_token=" + t.text(r, "topk")));
            CHECK(has(job.sets, "model.expert_ffn_hidden=" + t.text(r, "moe_ffn_hidden")));
            CHECK(has(job.sets, "parallel.expert=" + t.text(r, "ep")));
            CHECK(has(job.sets, "parallel.expert_tensor=" + (t.empty(r, "etp") ? std::string("1") : t.text(r, "etp"))));
        } else {
            CHECK_FALSE(has(job.sets, "parallel.expert=" + t.text(r, "ep")));
        }
    }
}

TEST_CASE("modern: Nemotron-4 340B reduces its gradients in bf16, as its NeMo recipe states", "[validate][modern]") {
    const CsvTable t = CsvTable::read(kCsv);
    const ModernJob job = modern_job(t, row_of(t, "nemo2407-nemotron-340b-128"), cli::builtin_name_resolvers(), CheckOptions{});
    REQUIRE(job.needs.empty());
    CHECK(has(job.sets, "training.grad_precision=bf16"));
    const ModernJob gpt = modern_job(t, row_of(t, "nemo2407-gpt3-175b-128"), cli::builtin_name_resolvers(), CheckOptions{});
    CHECK_FALSE(has(gpt.sets, "training.grad_precision=bf16"));
}

// Megatron-Bridge's performance scripts turn off fp32 gradient reduction for every model they
// benchmark (`cfg.ddp.grad_reduce_in_fp32 = False` in the common settings of its Llama 3, Llama 3.1,
// Qwen3 and DeepSeek-V3 configurations; validate/data/modern/README.md), so each of its rows runs
// with 16-bit gradients.
TEST_CASE("modern: every Megatron-Bridge row reduces its gradients in bf16, as its scripts set", "[validate][modern]") {
    const CsvTable t = CsvTable::read(kCsv);
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    int rows = 0;
    for (std::size_t r = 0; r < t.rows(); ++r) {
        if (t.text(r, "block") != "megatron-bridge-25.11") continue;
        ++rows;
        INFO(t.text(r, "row_id"));
        const ModernJob job = modern_job(t, r, names, CheckOptions{});
        REQUIRE(job.needs.empty());
        CHECK(has(job.sets, "training.grad_precision=bf16"));
    }
    CHECK(rows == 16);
}

TEST_CASE("modern: a gradient dtype cuboid does not know is refused at its key", "[validate][modern]") {
    // The data file with the Nemotron row's gradient dtype misspelt.
    std::ifstream in(kCsv);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string::size_type row = text.find("\nnemo2407-nemotron-340b-128,");
    REQUIRE(row != std::string::npos);
    const std::string::size_type at = text.find(",bf16,NeMo", row);  // grad_reduce_dtype, framework
    REQUIRE(at < text.find('\n', row + 1));
    text.replace(at, 6, ",half,");
    const auto path = cuboid::scratch::file("cuboid_modern_grad_dtype.csv");
    std::ofstream(path) << text;
    const CsvTable t = CsvTable::read(path.string());
    std::filesystem::remove(path);
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    const std::size_t r = row_of(t, "nemo2407-nemotron-340b-128");
    REQUIRE(t.text(r, "grad_reduce_dtype") == "half");
    const ModernJob job = modern_job(t, r, names, CheckOptions{});
    REQUIRE(job.needs.empty());
    Scenario scenario = cli::load_scenario_file(job.scenario_path, names);
    CHECK_THROWS_AS(cli::apply_overrides(scenario, job.sets, names), InputError);
    CHECK_THROWS_WITH(cli::apply_overrides(scenario, job.sets, names), Catch::Contains("training.grad_precision"));
}

TEST_CASE("modern: weak scaling compares per-GPU throughput from the fewest GPUs to the most",
          "[validate][modern]") {
    const auto row = [](int gpus, double measured, double predicted) {
        // Weak scaling: the batch (tokens per iteration) grows with the GPUs.
        return ModernRow{CheckRow{"modern", "m", "id", predicted, measured, {}}, "b", "h100-sxm-80gb", "fp8", gpus,
                         1000.0 * gpus, true};
    };
    ModernRow unexpressible = row(64, 1.0, 0.0);
    unexpressible.check.expressible = false;
    unexpressible.check.failure = "needs context parallelism (cp=2)";
    // Per GPU: 1000 tokens in 1.0 s at 8 GPUs, in 1.25 s at 32 (-20 %); predicted 1.0 s and 1.1 s.
    const ModernSummary s = summarise_modern({row(32, 1.25, 1.1), row(8, 1.0, 1.0), unexpressible});
    REQUIRE(s.scaling.size() == 1);
    CHECK(s.scaling[0].gpus_from == 8);
    CHECK(s.scaling[0].gpus_to == 32);
    CHECK(s.scaling[0].measured_change == Approx(1.0 / 1.25 - 1.0));
    CHECK(s.scaling[0].predicted_change == Approx(1.0 / 1.1 - 1.0));
    CHECK(s.expressible == 2);
    CHECK(s.failures == 0);
    CHECK(s.subset_rows == 3);
    CHECK(s.subset.simulated == 2);
    CHECK(s.subset.worst == Approx(0.12));  // (1.1 - 1.25) / 1.25
}
