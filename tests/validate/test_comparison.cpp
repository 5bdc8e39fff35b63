// Comparison of predicted and measured figures: relative errors, verdict thresholds, CSV and JSON
// shapes, the measured-file format, and the breakdown of measured op intervals.
#include <catch2/catch.hpp>

#include <sstream>

#include "hardware_models/errors.hpp"
#include "validate/report/comparison.hpp"
#include "validate/report/interval_breakdown.hpp"
#include "strategies/program_streams.hpp"

using namespace cuboid;
using namespace cuboid::validate;

namespace {

Figures predicted() {
    Figures f;
    f.gpus = 1;
    f.iteration_time_s = 1.0;
    f.peak_memory_bytes = 40e9;
    f.op_kind_seconds = {{"gemm", 0.6}, {"all-reduce", 0.2}};
    f.breakdown = {.compute_s = 0.7, .recompute_s = 0.1, .tp_comm_exposed_s = 0.1, .pp_comm_exposed_s = 0.0,
                   .dp_comm_exposed_s = 0.05, .bubble_s = 0.05};
    f.ops = {{0, 0, 1e-3}, {0, 1, 2e-3}, {0, 2, 3e-3}};
    return f;
}

const Row& row(const Comparison& c, const std::string& metric) {
    for (const Row& r : c.rows)
        if (r.metric == metric) return r;
    FAIL("no row " << metric);
    return c.rows.front();
}

}  // namespace

TEST_CASE("relative errors are (predicted - measured) / measured") {
    Figures m = predicted();
    m.iteration_time_s = 1.25;          // predicted 1.0: (1.0 - 1.25) / 1.25 = -0.2
    m.peak_memory_bytes = 50e9;         // (40 - 50) / 50 = -0.2
    m.op_kind_seconds = {{"gemm", 0.5}, {"softmax", 0.1}};
    const Comparison c = compare(predicted(), m, 1000.0);
    CHECK(*row(c, "iteration time").error == Approx(-0.2));
    CHECK(*row(c, "peak memory").error == Approx(-0.2));
    // throughput = tokens / time: 1000/1.0 against 1000/1.25, error (1000 - 800) / 800 = +0.25
    CHECK(row(c, "throughput").predicted == Approx(1000.0));
    CHECK(row(c, "throughput").measured == Approx(800.0));
    CHECK(*row(c, "throughput").error == Approx(0.25));
    CHECK(*row(c, "time gemm").error == Approx((0.6 - 0.5) / 0.5));
    // a kind measured but not predicted: predicted 0, error -100 %
    CHECK(*row(c, "time softmax").error == Approx(-1.0));
    // a kind predicted but not measured has no relative error
    CHECK_FALSE(row(c, "time all-reduce").error.has_value());
    // exposed communication: tp + pp + dp = 0.1 + 0 + 0.05 on both sides
    CHECK(row(c, "exposed communication").predicted == Approx(0.15));
    CHECK(*row(c, "exposed communication").error == Approx(0.0));
}

TEST_CASE("the verdict takes the worst of iteration time, peak memory and the median per-op error") {
    CHECK(verdict_for(0.05) == Verdict::Within5);
    CHECK(verdict_for(0.0501) == Verdict::Within10);
    CHECK(verdict_for(0.10) == Verdict::Within10);
    CHECK(verdict_for(0.1001) == Verdict::Off);

    Figures m = predicted();
    m.iteration_time_s = 1.0 / 1.04;  // predicted 4 % too slow
    m.ops = {{0, 0, 1e-3}, {0, 1, 2e-3}, {0, 2, 3e-3}};
    Comparison c = compare(predicted(), m, 1.0);
    CHECK(c.verdict == Verdict::Within5);
    CHECK(c.headline_error == Approx(0.04));
    CHECK(c.verdict_line.rfind("verdict: within 5%", 0) == 0);

    // per-op errors 0 %, +100 % (predicted 2 ms, measured 1 ms), -25 % (3 against 4): median 25 %
    m.ops = {{0, 0, 1e-3}, {0, 1, 1e-3}, {0, 2, 4e-3}, {1, 0, 5.0}};  // rank 1 was not predicted
    c = compare(predicted(), m, 1.0);
    REQUIRE(c.median_op_error);
    CHECK(*c.median_op_error == Approx(0.25));
    CHECK(c.compared_ops == 3);
    CHECK(c.verdict == Verdict::Off);

    m.ops.clear();
    m.peak_memory_bytes = 40e9 / 1.08;  // predicted 8 % too much memory
    c = compare(predicted(), m, 1.0);
    CHECK(c.verdict == Verdict::Within10);
    CHECK(c.headline_error == Approx(0.08));
}

TEST_CASE("the CSV has a header and one line per row; the JSON lists the rows and the verdict") {
    const Comparison c = compare(predicted(), predicted(), 1.0);
    std::ostringstream csv;
    write_csv(csv, c);
    std::istringstream lines(csv.str());
    std::string line;
    std::getline(lines, line);
    CHECK(line == "metric,unit,predicted,measured,relative_error");
    std::size_t n = 0;
    while (std::getline(lines, line)) {
        ++n;
        CHECK(std::count(line.begin(), line.end(), ',') == 4);
    }
    CHECK(n == c.rows.size());
    const nlohmann::json j = comparison_json(c, "tiny");
    CHECK(j.at("scenario") == "tiny");
    CHECK(j.at("rows").size() == c.rows.size());
    CHECK(j.at("verdict") == "within 5%");
    CHECK(j.at("median_op_error").get<double>() == 0.0);  // identical figures
    for (const auto& r : j.at("rows")) CHECK(r.contains("relative_error"));
}

TEST_CASE("a measured file reads back what was written, and names a missing key") {
    Figures m = predicted();
    m.device = "test device";
    m.gpus = 2;
    m.iteration_times_s = {1.0, 1.1};
    m.notes = {"a note"};
    const Figures back = figures_from_json(to_json(m), "m.json");
    CHECK(back.device == "test device");
    CHECK(back.gpus == 2);
    CHECK(back.iteration_time_s == m.iteration_time_s);
    CHECK(back.iteration_times_s == m.iteration_times_s);
    CHECK(back.op_kind_seconds == m.op_kind_seconds);
    CHECK(back.breakdown.tp_comm_exposed_s == m.breakdown.tp_comm_exposed_s);
    REQUIRE(back.ops.size() == 3);
    CHECK(back.ops[2].seconds == m.ops[2].seconds);
    nlohmann::json j = to_json(m);
    j.erase("iteration_time_s");
    CHECK_THROWS_WITH(figures_from_json(j, "m.json"), Catch::Contains("iteration_time_s"));
}

TEST_CASE("a measured file of the wrong shape is refused as bad input, naming the key") {
    Figures base = predicted();
    base.gpus = 2;
    const nlohmann::json good = to_json(base);
    const auto refused = [&](const char* key, const nlohmann::json& value) {
        nlohmann::json j = good;
        j[key] = value;
        INFO(key << " = " << value.dump());
        CHECK_THROWS_AS(figures_from_json(j, "m.json"), InputError);
        CHECK_THROWS_WITH(figures_from_json(j, "m.json"), Catch::Contains(key));
    };
    refused("device", 7);
    refused("gpus", 1e300);  // a float: converting it to int would be undefined
    refused("gpus", 2.5);
    refused("gpus", 0);
    refused("gpus", -3);
    refused("iteration_times_s", "x");
    refused("op_kind_seconds", nlohmann::json::array({1, 2}));
    refused("breakdown", nlohmann::json::array({1}));
    refused("ops", nlohmann::json::object({{"rank", 1}}));
    refused("ops", nlohmann::json::array({1}));
    refused("notes", nlohmann::json::array({1}));
    nlohmann::json j = good;
    j["ops"][0]["rank"] = -1;
    CHECK_THROWS_AS(figures_from_json(j, "m.json"), InputError);
    CHECK_THROWS_WITH(figures_from_json(j, "m.json"), Catch::Contains("rank"));
    CHECK_THROWS_AS(figures_from_text("{\"gpus\": ", "m.json"), InputError);
    CHECK_THROWS_WITH(figures_from_text("{\"gpus\": ", "m.json"), Catch::Contains("not valid JSON"));
    // A number past double's range is a parse failure too, not an internal error (found by
    // fuzz_measured_figures).
    CHECK_THROWS_AS(figures_from_text("{\"gpus\": 1e99999}", "m.json"), InputError);
    CHECK(figures_from_text(good.dump(), "m.json").gpus == 2);
}

TEST_CASE("a measured file carries the context and expert parts, which older files lack") {
    Figures m = predicted();
    m.breakdown.cp_comm_exposed_s = 0.02;
    m.breakdown.ep_comm_exposed_s = 0.03;
    nlohmann::json j = to_json(m);
    const Figures back = figures_from_json(j, "m.json");
    CHECK(back.breakdown.cp_comm_exposed_s == 0.02);
    CHECK(back.breakdown.ep_comm_exposed_s == 0.03);
    // Compared row by row, one per axis, the order of the breakdown's classes.
    const Comparison c = compare(predicted(), back, 1.0);
    CHECK(row(c, "exposed context comm").measured == 0.02);
    CHECK(row(c, "exposed expert comm").measured == 0.03);
    CHECK(row(c, "exposed expert comm").predicted == 0.0);
    std::vector<std::string> metrics;
    for (const Row& r : c.rows) {
        if (r.metric.starts_with("exposed ") && r.metric.ends_with(" comm")) metrics.push_back(r.metric);
    }
    CHECK(metrics == std::vector<std::string>{"exposed tensor comm", "exposed context comm", "exposed expert comm",
                                              "exposed pipeline comm", "exposed offload comm", "exposed data comm"});
    // A file written before these parts existed measured none.
    j["breakdown"].erase("cp_comm_exposed_s");
    j["breakdown"].erase("ep_comm_exposed_s");
    const Figures old = figures_from_json(j, "m.json");
    CHECK(old.breakdown.cp_comm_exposed_s == 0.0);
    CHECK(old.breakdown.ep_comm_exposed_s == 0.0);
    CHECK(old.breakdown.tp_comm_exposed_s == m.breakdown.tp_comm_exposed_s);
    // The parts every file has stay required.
    j["breakdown"].erase("pp_comm_exposed_s");
    CHECK_THROWS_WITH(figures_from_json(j, "m.json"), Catch::Contains("pp_comm_exposed_s"));
}

TEST_CASE("measured intervals are charged as the simulator charges its breakdown") {
    sim::OpList list;
    sim::OpListBuilder b(list);
    sim::Op gemm;
    gemm.kind = sim::OpKind::Gemm;
    sim::Op recompute = gemm;
    recompute.category = sim::OpCategory::Recompute;
    sim::Op tp;
    tp.kind = sim::OpKind::AllReduce;
    tp.category = comm_class::kTensor;
    tp.stream = stream::kTensorComm;
    sim::Op dp = tp;
    dp.category = comm_class::kData;
    dp.stream = stream::kDataComm;
    b.add(gemm);
    b.add(tp);
    b.add(dp);
    b.add(recompute);
    // compute [0,1]; tensor [1,3] and data [0.5,4] in flight; recompute [3.5,4.5], the last end.
    const std::vector<Interval> iv = {{0.0, 1.0}, {1.0, 3.0}, {0.5, 4.0}, {3.5, 4.5}};
    const PartTimes t = interval_breakdown(list, iv);
    CHECK(t.compute_s == Approx(1.0));
    CHECK(t.recompute_s == Approx(1.0));
    CHECK(t.tp_comm_exposed_s == Approx(2.0));  // [1,3]: tensor before data
    CHECK(t.dp_comm_exposed_s == Approx(0.5));  // [3,3.5]: only data in flight
    CHECK(t.pp_comm_exposed_s == 0.0);
    CHECK(t.bubble_s == Approx(0.0));
    CHECK(t.compute_s + t.recompute_s + t.exposed_comm_s() + t.bubble_s == Approx(4.5));
}

TEST_CASE("measured intervals: context before expert before data, as the simulator's classes") {
    sim::OpList list;
    sim::OpListBuilder b(list);
    sim::Op op;
    op.kind = sim::OpKind::AllToAll;
    for (const sim::OpCategory c : {comm_class::kContext, comm_class::kExpert, comm_class::kData}) {
        op.category = c;
        b.add(op);
    }
    sim::Op gemm;
    gemm.kind = sim::OpKind::Gemm;
    b.add(gemm);
    // context [0,2], expert [1,3], data [0,4] in flight, then compute [4,5].
    const std::vector<Interval> iv = {{0.0, 2.0}, {1.0, 3.0}, {0.0, 4.0}, {4.0, 5.0}};
    const PartTimes t = interval_breakdown(list, iv);
    CHECK(t.cp_comm_exposed_s == Approx(2.0));
    CHECK(t.ep_comm_exposed_s == Approx(1.0));
    CHECK(t.dp_comm_exposed_s == Approx(1.0));
    CHECK(t.tp_comm_exposed_s == 0.0);
    CHECK(t.compute_s == Approx(1.0));
    CHECK(t.bubble_s == 0.0);
}
