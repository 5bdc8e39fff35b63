// A sweep that ends early keeps what it has: the partial markers of the CSV and JSON, points a
// stop or a rank's share leaves out, the interleaved split over MPI ranks, the bytes a rank sends
// to rank 0, and the file:line:key messages of empty or unknown sweep axes.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/sweep_mpi.hpp"
#include "strategies/cli/sweep_output.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {

PointOutcome ran(PointStatus status, double time_s, double memory) {
    PointOutcome o;
    o.status = status;
    o.result = RunResult{};
    o.result->scenario = "s";
    o.result->iteration_time_s = time_s;
    o.result->peak_memory_bytes = memory;
    o.result->fits_in_memory = status == PointStatus::Ok;
    o.result->stage_peak_memory_bytes = {memory, memory / 3};
    o.result->cost_usd = 0.1;  // 0.1 has no exact binary form: a decimal round trip could change it
    o.run_json = {{"scenario", "s"}, {"iteration_time_s", time_s}, {"peak_memory_bytes", memory}};
    return o;
}

// Three points on one axis: the first ran, the second was never reached, the third ran.
SweepResult three_points_one_not_run() {
    SweepResult r;
    r.name = "s";
    r.axes = {{"parallel.tensor", {"1", "2", "4"}}};
    r.points = sweep_points(r.axes);
    r.outcomes = {ran(PointStatus::Ok, 2.0, 1e9), PointOutcome{}, ran(PointStatus::Ok, 1.0, 2e9)};
    r.stopped = "interrupted by SIGINT";
    return ranked(std::move(r));
}

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = cuboid::scratch::file("cuboid-sweep-partial-" + name);
    std::ofstream(path) << text;
    return path.string();
}

}  // namespace

TEST_CASE("a partial CSV starts with a comment line, then the header and the rows that ran", "[cli][sweep]") {
    const SweepResult r = three_points_one_not_run();
    REQUIRE(r.partial());
    CHECK(r.done() == 2u);
    std::ostringstream csv;
    write_sweep_csv(csv, r);
    std::istringstream lines(csv.str());
    std::string first, header, row;
    std::getline(lines, first);
    CHECK(first == "# partial: 2 of 3 points done (interrupted by SIGINT)");
    std::getline(lines, header);
    CHECK(header.rfind("parallel.tensor,status,pareto,", 0) == 0);
    std::vector<std::string> rows;
    while (std::getline(lines, row)) rows.push_back(row);
    // The two points that ran, fastest first (tensor 4 took 1 s, tensor 1 took 2 s).
    REQUIRE(rows.size() == 2u);
    CHECK(rows[0].rfind("4,ok,", 0) == 0);
    CHECK(rows[1].rfind("1,ok,", 0) == 0);
}

TEST_CASE("a partial JSON is an object that says so around the rows that ran", "[cli][sweep]") {
    const auto j = sweep_json(three_points_one_not_run());
    REQUIRE(j.is_object());
    CHECK(j.at("partial") == true);
    CHECK(j.at("points_done") == 2);
    CHECK(j.at("points_total") == 3);
    CHECK(j.at("reason") == "interrupted by SIGINT");
    REQUIRE(j.at("rows").size() == 2u);
    CHECK(j.at("rows")[0].at("parallel.tensor") == 4);

    // A complete sweep keeps the contract's bare array and no comment line.
    SweepResult complete = three_points_one_not_run();
    complete.outcomes[1] = ran(PointStatus::OutOfMemory, 3.0, 9e9);
    complete.stopped.clear();
    complete = ranked(std::move(complete));
    CHECK_FALSE(complete.partial());
    CHECK(sweep_json(complete).is_array());
    std::ostringstream csv;
    write_sweep_csv(csv, complete);
    CHECK(csv.str().rfind("parallel.tensor,", 0) == 0);
}

TEST_CASE("a point that failed with an internal error makes the output partial", "[cli][sweep]") {
    SweepResult r = three_points_one_not_run();
    r.stopped.clear();
    r.outcomes[1].status = PointStatus::Error;
    r.outcomes[1].reason = "bug";
    r = ranked(std::move(r));
    CHECK(r.partial());
    CHECK(r.partial_reason() == "1 point failed with an internal error");
    const auto j = sweep_json(r);
    CHECK(j.at("points_done") == 3);  // the error row is there, with its message
    CHECK(j.at("rows").size() == 3u);
}

TEST_CASE("MPI ranks share the points interleaved: disjoint, together every point", "[cli][sweep][mpi]") {
    const std::size_t total = 11;
    const int ranks = 3;
    std::set<std::size_t> seen;
    for (int rank = 0; rank < ranks; ++rank) {
        const auto share = rank_share(total, rank, ranks);
        // Rank r gets r, r + 3, r + 6, ...: ceil((11 - r) / 3) points.
        CHECK(share.size() == (total - static_cast<std::size_t>(rank) + ranks - 1) / ranks);
        for (const std::size_t i : share) {
            CHECK(i % ranks == static_cast<std::size_t>(rank));
            CHECK(seen.insert(i).second);
        }
    }
    CHECK(seen.size() == total);
    CHECK(rank_share(2, 5, 8).empty());  // more ranks than points: some run none
}

TEST_CASE("a rank's outcomes cross to rank 0 bit for bit", "[cli][sweep][mpi]") {
    SweepShare share;
    share.indices = {4, 1, 7};
    share.outcomes = {ran(PointStatus::Ok, 1.0 / 3.0, 1.5e9), ran(PointStatus::OutOfMemory, 2.0, 9e10), PointOutcome{}};
    share.outcomes[2].status = PointStatus::Invalid;
    share.outcomes[2].reason = "parallel.tensor: too big";
    share.failure = "boom";
    share.signal = SIGTERM;
    const SweepShare back = decode_share(encode_share(share));
    CHECK(back.indices == share.indices);
    CHECK(back.failure == "boom");
    CHECK(back.signal == SIGTERM);
    REQUIRE(back.outcomes.size() == 3u);
    for (std::size_t k = 0; k < 3; ++k) {
        CHECK(back.outcomes[k].status == share.outcomes[k].status);
        CHECK(back.outcomes[k].reason == share.outcomes[k].reason);
        CHECK(back.outcomes[k].run_json.dump() == share.outcomes[k].run_json.dump());  // field order kept
        CHECK(back.outcomes[k].result.has_value() == share.outcomes[k].result.has_value());
    }
    // Exact equality, not approximate: 1/3 and 0.1 must arrive as the same doubles.
    CHECK(back.outcomes[0].result->iteration_time_s == 1.0 / 3.0);
    CHECK(back.outcomes[0].result->cost_usd == share.outcomes[0].result->cost_usd);
    CHECK(back.outcomes[0].result->stage_peak_memory_bytes == share.outcomes[0].result->stage_peak_memory_bytes);

    std::vector<PointOutcome> merged(8);
    merge_share(back, merged);
    CHECK(merged[4].status == PointStatus::Ok);
    CHECK(merged[7].status == PointStatus::Invalid);
    CHECK(merged[0].status == PointStatus::NotRun);
    std::vector<PointOutcome> too_small(2);
    CHECK_THROWS(merge_share(back, too_small));
    CHECK_THROWS(decode_share({0x01, 0x02}));
}

TEST_CASE("a stopped sweep runs no further point; a share leaves the others not run", "[cli][sweep]") {
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    HardwareCache cache(catalog);
    const SweepAxes axes{{"cluster.gpu", {"a100", "a100"}}};
    const auto points = sweep_points(axes);
    SweepRunOptions options;
    const std::atomic<int> stop{SIGINT};
    options.stop = &stop;
    for (const auto& o : run_points(Scenario{}, axes, points, fake_names(), cache, options))
        CHECK(o.status == PointStatus::NotRun);

    SweepRunOptions share_only;
    share_only.only = std::vector<std::size_t>{1};
    const auto outcomes = run_points(Scenario{}, axes, points, fake_names(), cache, share_only);
    CHECK(outcomes[0].status == PointStatus::NotRun);
    CHECK(outcomes[1].status == PointStatus::Invalid);  // it ran: the empty scenario has no model
}

TEST_CASE("empty sweep lists and unknown sweep keys: file:line:key, exit 2", "[cli][sweep]") {
    const std::string head =
        "name: x\nmodel:\n  preset: gpt-7.5b\ncluster:\n  gpu: a100-sxm-40gb\n  nodes: 1\n  gpus_per_node: 8\n"
        "training:\n  global_batch: 16\nsweep:\n";  // 10 lines: the first axis is on line 11
    const std::string empty = write_temp("empty.yaml", head + "  parallel.tensor: []\n");
    const auto e = run_cli({"sweep", empty});
    CHECK(e.code == 2);
    CHECK(contains(e.err, empty + ":11: 'sweep.parallel.tensor'"));
    CHECK(contains(e.err, "non-empty list"));
    CHECK(e.out.empty());

    const std::string unknown = write_temp("unknown.yaml", head + "  parallel.pipeline: [1]\n  parallel.tensr: [1]\n");
    const auto u = run_cli({"sweep", unknown});
    CHECK(u.code == 2);
    CHECK(contains(u.err, unknown + ":12: 'sweep.parallel.tensr'"));
    CHECK(contains(u.err, "did you mean 'parallel.tensor'"));
}
