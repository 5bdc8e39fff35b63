// MFU against the dense BF16 peak beside the precision's own: an FP8 plan reads on the same
// yardstick as a BF16 one, in the report, the run JSON, the sweep CSV and what MPI ranks send.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/sweep_outcome_codec.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "strategies/cli/text_report.hpp"
#include "strategies/run.hpp"

using namespace cuboid;
using namespace cuboid::cli;

namespace {

Scenario llama_on_h100(const std::string& precision) {
    return load_scenario_text("model: {preset: llama3-8b, seq_len: 2048}\n"
                              "cluster: {gpu: h100-sxm-80gb, nodes: 1}\n"
                              "parallel: {tensor: 4, pipeline: 2}\n"
                              "training: {global_batch: 16, precision: " + precision + "}\n",
                              "mfu.yaml", "", builtin_name_resolvers());
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("an FP8 plan's MFU is also given against the dense BF16 peak", "[cli][mfu]") {
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    const hw::GpuSpec& h100 = catalog.gpu("h100-sxm-80gb");
    const double ratio = h100.peak(sim::Precision::Fp8).value / h100.peak(sim::Precision::Bf16).value;
    REQUIRE(ratio == Approx(2.0).epsilon(0.01));  // the catalog's dense peaks: 1979 vs 989 TFLOP/s

    const Scenario fp8 = llama_on_h100("fp8");
    const RunResult r = run_scenario(fp8);
    REQUIRE(r.mfu > 0.0);
    CHECK(r.mfu_bf16 == Approx(r.mfu * ratio).epsilon(1e-12));
    CHECK(r.mfu_bf16 == Approx(r.model_tflops_per_gpu * 1e12 / h100.peak(sim::Precision::Bf16).value));

    const auto j = result_json(fp8, r);
    CHECK(j["mfu"].get<double>() == r.mfu);  // the contract's field keeps its meaning
    CHECK(j["mfu_bf16"].get<double>() == r.mfu_bf16);
    std::ostringstream report;
    write_report(report, fp8, r);
    INFO(report.str());
    CHECK(contains(report.str(), fmt::format("MFU       {:.1f} % of the dense fp8 peak, {:.1f} % of the dense bf16 peak",
                                             100.0 * r.mfu, 100.0 * r.mfu_bf16)));

    // A BF16 plan: the two are the same figure.
    const Scenario bf16 = llama_on_h100("bf16");
    const RunResult b = run_scenario(bf16);
    CHECK(b.mfu_bf16 == b.mfu);
    std::ostringstream bf16_report;
    write_report(bf16_report, bf16, b);
    CHECK(contains(bf16_report.str(), fmt::format("MFU       {:.1f} % of the dense bf16 peak\n", 100.0 * b.mfu)));
    // FP8 is faster here, and on the common yardstick it shows (its own-peak MFU reads lower).
    CHECK(r.iteration_time_s < b.iteration_time_s);
    CHECK(r.mfu_bf16 > b.mfu_bf16);
    CHECK(r.mfu < b.mfu);
}

namespace {

// `r` as one point's outcome, sent to another MPI rank and read back there.
RunResult across_ranks(const RunResult& r) {
    PointOutcome o;
    o.status = PointStatus::Ok;
    o.result = r;
    SweepShare share;
    share.indices = {0};
    share.outcomes = {o};
    const SweepShare back = decode_share(encode_share(share));
    REQUIRE(back.outcomes.size() == 1);
    REQUIRE(back.outcomes[0].result.has_value());
    return *back.outcomes[0].result;
}

}  // namespace

TEST_CASE("mfu_bf16 travels between MPI ranks and reaches the sweep CSV", "[cli][mfu]") {
    RunResult r;
    r.mfu = 0.3;
    r.mfu_bf16 = 0.6;
    r.sim_fold_factor = 4.0;
    const RunResult back = across_ranks(r);
    CHECK(back.mfu_bf16 == 0.6);
    CHECK(back.sim_fold_factor == 4.0);  // a merged row says what the rank's run simulated
    const auto columns = sweep_csv_columns();
    CHECK(std::find(columns.begin(), columns.end(), "mfu_bf16") != columns.end());
    CHECK(std::find(columns.begin(), columns.end(), "mfu") != columns.end());
}

TEST_CASE("every part of the breakdown travels between MPI ranks and has a sweep CSV column", "[cli]") {
    RunResult r;
    double seconds = 1.0;
    for (const BreakdownPart& part : breakdown_parts()) r.breakdown.*part.seconds = seconds++;
    const RunResult back = across_ranks(r);
    const auto columns = sweep_csv_columns();
    for (const BreakdownPart& part : breakdown_parts()) {
        INFO(part.key);
        CHECK(back.breakdown.*part.seconds == r.breakdown.*part.seconds);
        CHECK(std::count(columns.begin(), columns.end(), std::string("breakdown_s.") + part.key) == 1);
    }
    CHECK(breakdown_parts().size() == 9);
}
