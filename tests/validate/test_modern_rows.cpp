// The `modern` set of cuboid-published-check (validate/published/modern_rows.hpp): the CSV loads,
// every row is simulated or says what it needs, reasons follow from the row's fields, and the
// measured throughput converts to the iteration time it implies.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "strategies/cli/catalog_bridge.hpp"
#include "validate/published/modern_rows.hpp"
#include "validate/published/modern_summary.hpp"

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

    const auto path = std::filesystem::temp_directory_path() / "cuboid_modern_metric.csv";
    {
        std::ofstream out(path);
        out << "row_id,measured_metric,measured_value,global_batch,seq_len,gpus\nx,mfu,0.4,8,2048,8\n";
    }
    const CsvTable other = CsvTable::read(path.string());
    CHECK_THROWS_WITH(modern_measured_seconds(other, 0), Catch::Contains("only tokens_per_s_per_gpu"));
    std::filesystem::remove(path);
}

TEST_CASE("modern: every row is simulated or names what it needs", "[validate][modern]") {
    CheckOptions options;
    options.threads = 2;
    const std::vector<ModernRow> rows = run_modern_rows(options);
    REQUIRE(rows.size() == CsvTable::read(kCsv).rows());
    int expressible = 0;
    for (const ModernRow& r : rows) {
        INFO(r.check.label << ": " << r.check.failure);
        CHECK(r.check.measured_s > 0);
        if (r.check.expressible) {
            ++expressible;
            CHECK(r.check.failure.empty());
            CHECK(r.check.predicted_s > 0);
        } else {
            CHECK_FALSE(r.check.failure.empty());
        }
    }
    CHECK(expressible > 0);
    const ModernSummary s = summarise_modern(rows);
    CHECK(s.rows == static_cast<int>(rows.size()));
    CHECK(s.expressible == expressible);
    CHECK(s.failures == 0);  // unexpressible rows are not failures
}

TEST_CASE("modern: reasons and overrides follow from the row's fields", "[validate][modern]") {
    const CsvTable t = CsvTable::read(kCsv);
    const cli::NameResolvers names = cli::builtin_name_resolvers();
    const CheckOptions options;
    for (std::size_t r = 0; r < t.rows(); ++r) {
        const ModernJob job = modern_job(t, r, names, options);
        INFO(t.text(r, "row_id"));
        const auto needs = [&](const std::string& what) { return Catch::Contains(what).match(job.row.check.failure); };
        if (!t.empty(r, "cp") && t.number(r, "cp") > 1) CHECK(needs("context parallelism (cp=" + t.text(r, "cp") + ")"));
        if (t.text(r, "moe") == "yes") CHECK(needs("mixture of experts"));
        if (t.text(r, "precision") == "fp8-mx") CHECK(needs("MXFP8"));
        if (!job.needs.empty()) continue;
        // Expressible: the base scenario of its block and GPU, the row's plan on top.
        CHECK(std::filesystem::exists(job.scenario_path));
        CHECK(has(job.sets, "parallel.tensor=" + t.text(r, "tp")));
        const bool interleaved = !t.empty(r, "virtual_stages") && t.number(r, "virtual_stages") > 1;
        CHECK(has(job.sets, std::string("parallel.schedule=") + (interleaved ? "interleaved" : "1f1b")));
        CHECK(has(job.sets, "parallel.virtual_stages=" + (interleaved ? t.text(r, "virtual_stages") : "1")));
        CHECK(has(job.sets, std::string("parallel.sequence_parallel=") + (t.number(r, "tp") > 1 ? "true" : "false")));
        // FSDP (PyTorch's FULL_SHARD / FSDP2, Megatron-FSDP) is ZeRO-3.
        const bool fsdp = Catch::Contains("FSDP").match(t.text(r, "distributed_optimizer"));
        if (fsdp) CHECK(has(job.sets, "parallel.zero_stage=3"));
        else CHECK_FALSE(has(job.sets, "parallel.zero_stage=3"));
    }
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
