// The command line in process: exit codes, messages on the error stream, the list topics, and
// errors found by the plan validation pointing back at the file or the --set.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "strategies/cli/cli_main.hpp"
#include "strategies/cli/list_command.hpp"
#include "tests/cli/cli_outcome.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {


const std::string kDefault = std::string(CUBOID_SOURCE_DIR) + "/scenarios/default.yaml";

// The (1-based) line of the first line of `file` that starts with `prefix`.
int line_of(const std::string& file, const std::string& prefix) {
    std::ifstream in(file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (line.rfind(prefix, 0) == 0) return n;
    FAIL("no line starting with '" << prefix << "' in " << file);
    return 0;
}

// Small enough to simulate in milliseconds: 4 nodes, tensor 8 x pipeline 2 x data 2.
const std::vector<std::string> kSmall{"--set", "cluster.nodes=4", "--set", "parallel.data=2",
                                      "--set", "training.global_batch=64"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("help and version exit 0", "[cli][main]") {
    CHECK(run_cli({"--help"}).code == 0);
    CHECK(contains(run_cli({"--help"}).out, "cuboid run SCENARIO.yaml"));
    const auto v = run_cli({"--version"});
    CHECK(v.code == 0);
    CHECK(contains(v.out, "cuboid " CUBOID_VERSION_TEXT));
}

TEST_CASE("every list topic prints something; an unknown one is bad input", "[cli][main]") {
    for (const auto& topic : list_topics()) {
        const auto o = run_cli({"list", topic});
        INFO(topic);
        CHECK(o.code == 0);
        CHECK_FALSE(o.out.empty());
    }
    CHECK(contains(run_cli({"list", "gpus"}).out, "a100-sxm-80gb"));
    // Every tensor mode of the contract is listed.
    for (const char* mode : {"1d", "2d", "3d", "atp"}) CHECK(contains(run_cli({"list", "tensor-modes"}).out, mode));
    // The recompute policies, and the modules of selective recomputation, each with its meaning.
    const std::string recompute = run_cli({"list", "recompute"}).out;
    for (const char* word : {"stage-aware", "core_attn ", "mla_up_proj ", "layernorm ", "moe_act ", "mlp "})
        CHECK(contains(recompute, word));
    const auto bad = run_cli({"list", "gpu"});
    CHECK(bad.code == 2);
    CHECK(contains(bad.err, "did you mean 'gpus'?"));
}

TEST_CASE("usage errors exit 2 with a message", "[cli][main]") {
    CHECK(run_cli({}).code == 2);
    const auto unknown = run_cli({"rnu", kDefault});
    CHECK(unknown.code == 2);
    CHECK(contains(unknown.err, "did you mean 'run'?"));
    CHECK(run_cli({"run"}).code == 2);
    CHECK(run_cli({"run", kDefault, "--no-such-option"}).code == 2);
}

TEST_CASE("run: a missing file and a bad --set are bad input naming where", "[cli][main]") {
    const auto missing = run_cli({"run", "no-such.yaml"});
    CHECK(missing.code == 2);
    CHECK(contains(missing.err, "no-such.yaml"));
    const auto bad_set = run_cli({"run", kDefault, "--set", "parallel.tensor=eight"});
    CHECK(bad_set.code == 2);
    CHECK(contains(bad_set.err, "--set: 'parallel.tensor': expected an integer, got 'eight'"));
    const auto unknown_set = run_cli({"run", kDefault, "--set", "cluster.node=2"});
    CHECK(unknown_set.code == 2);
    CHECK(contains(unknown_set.err, "did you mean 'cluster.nodes'?"));
}

TEST_CASE("zb-h1: listed, printed with its W passes, named in the report, refused with 2d", "[cli][main]") {
    CHECK(contains(run_cli({"list", "schedules"}).out, "zb-h1"));
    const auto o = run_cli(with({"run", kDefault, "--print-schedule", "--set", "parallel.schedule=zb-h1"}, kSmall));
    CHECK(o.code == 0);
    // p = 2, m = 16: stage 1 defers each W by one micro-batch.
    CHECK(contains(o.out, "s1: F0 B0 F1 B1 W0 F2 B2 W1"));
    CHECK(contains(o.out, "zb-h1 schedule"));
    const auto two_d = run_cli(with(with({"run", kDefault}, kSmall),  // the later --set wins
                                    {"--set", "parallel.schedule=zb-h1", "--set", "parallel.tensor_mode=2d", "--set",
                                     "parallel.tensor=4", "--set", "parallel.data=4"}));
    CHECK(two_d.code == 2);
    CHECK(contains(two_d.err, "'parallel.tensor_mode'"));
    CHECK(contains(two_d.err, "zb-h1 splits each layer's backward"));
}

TEST_CASE("run: degrees that do not multiply to the GPU count point at the key", "[cli][main]") {
    // default.yaml has 64 nodes x 8 GPUs and t=8 p=2 d=32; with t=4, t*p*d = 256 != 512. The
    // data degree written in the file is the inconsistent one: its line is reported.
    const auto file = run_cli({"run", kDefault, "--set", "parallel.tensor=4"});
    CHECK(file.code == 2);
    CHECK(contains(file.err, kDefault + ":" + std::to_string(line_of(kDefault, "  data:"))));
    CHECK(contains(file.err, "'parallel.data'"));
    CHECK(file.out.empty());
    // Given with --set, the same inconsistency points at --set.
    const auto set = run_cli({"run", kDefault, "--set", "parallel.data=16"});
    CHECK(set.code == 2);
    CHECK(contains(set.err, "--set: 'parallel.data'"));
}

TEST_CASE("run: a plan that does not fit exits 3 and still prints the result", "[cli][main]") {
    // No recomputation and 16 sequences per micro-batch: activations of 16 x 2048 tokens per
    // layer far exceed an 80 GiB GPU for a 39B model split 8 x 2.
    const auto o = run_cli(with({"run", kDefault, "--json", "-", "--set", "parallel.recompute=none", "--set",
                                "training.micro_batch=16"},
                               kSmall));
    REQUIRE(o.code == 3);
    const auto j = nlohmann::json::parse(o.out);
    CHECK_FALSE(j.at("fits_in_memory").get<bool>());
    CHECK(j.at("peak_memory_bytes").get<double>() > j.at("memory_capacity_bytes").get<double>());
    CHECK(contains(o.err, "does not fit"));
}

TEST_CASE("run: --json - leaves only JSON on stdout; --quiet none at all", "[cli][main]") {
    const auto j = run_cli(with({"run", kDefault, "--json", "-"}, kSmall));
    REQUIRE(j.code == 0);
    CHECK_NOTHROW(nlohmann::json::parse(j.out));
    const auto q = run_cli(with({"run", kDefault, "--quiet"}, kSmall));
    CHECK(q.code == 0);
    CHECK(q.out.empty());
    const auto report = run_cli(with({"run", kDefault}, kSmall));
    CHECK(contains(report.out, "MFU"));
    CHECK(contains(report.out, "bubble"));
}

TEST_CASE("run: --trace writes a Trace Event JSON document", "[cli][main]") {
    const auto path = cuboid::scratch::file("cuboid_cli_test.trace.json");
    const auto o = run_cli(with({"run", kDefault, "--quiet", "--trace", path.string()}, kSmall));
    REQUIRE(o.code == 0);
    std::ifstream in(path);
    const auto trace = nlohmann::json::parse(in);
    REQUIRE(trace.contains("traceEvents"));
    // One process per GPU: 4 nodes x 8 GPUs = 32 ranks, each named by a metadata event.
    int process_names = 0;
    for (const auto& e : trace["traceEvents"])
        if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") ++process_names;
    CHECK(process_names == 32);
    std::filesystem::remove(path);
    const auto bad = run_cli(with({"run", kDefault, "--trace", "/no/such/dir/t.json"}, kSmall));
    CHECK(bad.code == 4);  // an output that cannot be written
    CHECK(contains(bad.err, "/no/such/dir/t.json"));
}

// Folding is a way to simulate, not a different model: `run` (folded by default, and with the
// --fold of older scripts) must report the very same iteration and fingerprint as `run --no-fold`,
// with fewer events (4 nodes x tensor 8: the two replicas of each stage are images of each other,
// so at least half the ranks are not run). Each command rejects the switch that is not its own.
TEST_CASE("run folds by default with the full run's result and fewer events; misplaced switches are bad input",
          "[cli][main][fold]") {
    const auto full = run_cli(with({"run", kDefault, "--json", "-", "--no-fold"}, kSmall));
    const auto folded = run_cli(with({"run", kDefault, "--json", "-"}, kSmall));
    const auto named = run_cli(with({"run", kDefault, "--json", "-", "--fold"}, kSmall));
    REQUIRE(full.code == 0);
    REQUIRE(folded.code == 0);
    REQUIRE(named.code == 0);
    const auto a = nlohmann::json::parse(full.out);
    const auto b = nlohmann::json::parse(folded.out);
    CHECK(a["iteration_time_s"] == b["iteration_time_s"]);
    CHECK(a["fingerprint"] == b["fingerprint"]);
    CHECK(a["breakdown_s"] == b["breakdown_s"]);
    CHECK(b["sim"]["events"].get<double>() * 2 <= a["sim"]["events"].get<double>());
    CHECK(nlohmann::json::parse(named.out)["sim"]["events"] == b["sim"]["events"]);
    // The result says how many GPUs each simulated GPU stands for, and the report says it folded.
    CHECK(a["sim"]["fold_factor"].get<double>() == 1.0);
    CHECK(b["sim"]["fold_factor"].get<double>() >= 2.0);
    const auto report = run_cli(with({"run", kDefault}, kSmall));
    REQUIRE(report.code == 0);
    CHECK(contains(report.out, "proved identical (--no-fold: all)"));
    const auto full_report = run_cli(with({"run", kDefault, "--no-fold"}, kSmall));
    CHECK_FALSE(contains(full_report.out, "proved identical"));

    const auto sweep = run_cli({"sweep", kDefault, "--fold"});
    CHECK(sweep.code == 2);
    CHECK(contains(sweep.err, "does not take --fold"));
    const auto both = run_cli({"run", kDefault, "--fold", "--no-fold"});
    CHECK(both.code == 2);
    CHECK(contains(both.err, "--fold and --no-fold contradict each other"));
}

TEST_CASE("run: input errors of every kind exit 2 naming where, never an internal error", "[cli][main]") {
    // A name that is not UTF-8 would break the JSON output: refused at --set.
    const auto utf8 = run_cli(with({"run", kDefault, "--json", "-", "--set", "name=caf\xE9"}, kSmall));
    CHECK(utf8.code == 2);
    CHECK(contains(utf8.err, "--set: 'name': not valid UTF-8"));
    // Bandwidths below 1 bit/s are refused at their key (they used to overflow the clock).
    for (const char* set : {"cluster.intra_node_gbps=1e-320", "cluster.inter_node.nic_gbps=1e-320"}) {
        const auto o = run_cli(with({"run", kDefault, "--set", set}, kSmall));
        CHECK(o.code == 2);
        CHECK(contains(o.err, std::string(set).substr(0, std::string(set).find('='))));
        CHECK_FALSE(contains(o.err, "internal error"));
    }
    // 1 bit/s is a physical bandwidth, but a gradient all-reduce at that rate takes longer than the
    // clock holds: an input error naming the scenario, not "event scheduled in the past".
    const auto slow = run_cli(with({"run", kDefault, "--set", "cluster.inter_node.nic_gbps=1e-9"}, kSmall));
    CHECK(slow.code == 2);
    CHECK(contains(slow.err, "default.yaml: a simulated duration of"));
    CHECK(contains(slow.err, "beyond the simulator's clock"));
    // ATP's mesh with the 1d mode would be silently ignored.
    const auto atp = run_cli(with({"run", kDefault, "--set", "parallel.atp_mesh=4x2"}, kSmall));
    CHECK(atp.code == 2);
    CHECK(contains(atp.err, "--set: 'parallel.atp_mesh': only parallel.tensor_mode: atp reads this key"));
}

TEST_CASE("run: an out-of-memory plan names the changes that fit, and each one run alone fits", "[cli][main]") {
    const std::vector<std::string> oom{"--set", "parallel.recompute=none", "--set", "training.micro_batch=16"};
    const auto o = run_cli(with(with({"run", kDefault, "--json", "-"}, oom), kSmall));
    REQUIRE(o.code == 3);
    const auto j = nlohmann::json::parse(o.out);
    const auto& changes = j.at("memory").at("fitting_changes");
    REQUIRE_FALSE(changes.empty());
    CHECK(contains(o.err, "fits with --set"));
    for (const auto& c : changes) {
        std::vector<std::string> args = with(with({"run", kDefault, "--json", "-"}, oom), kSmall);
        for (const auto& a : c.at("set")) args.insert(args.end(), {"--set", a.get<std::string>()});
        INFO(c.dump());
        const auto applied = run_cli(args);
        CHECK(applied.code == 0);
        const auto r = nlohmann::json::parse(applied.out);
        CHECK(r.at("peak_memory_bytes") == c.at("peak_memory_bytes"));
        CHECK(r.at("iteration_time_s") == c.at("iteration_time_s"));
    }
    // The report shows them as --set options, with the changed plan's peak and time.
    const auto report = run_cli(with(with({"run", kDefault}, oom), kSmall));
    CHECK(report.code == 3);
    CHECK(contains(report.out, "to fit"));
    CHECK(contains(report.out, "--set " + changes[0].at("set")[0].get<std::string>()));
    // A plan that fits has no such list.
    const auto fits = run_cli(with({"run", kDefault, "--json", "-"}, kSmall));
    REQUIRE(fits.code == 0);
    CHECK_FALSE(nlohmann::json::parse(fits.out).at("memory").contains("fitting_changes"));
}

TEST_CASE("run: the memory breakdown in the JSON sums exactly to each stage's peak", "[cli][main]") {
    const auto o = run_cli(with({"run", kDefault, "--json", "-"}, kSmall));
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    const auto& stages = j.at("memory").at("stages");
    REQUIRE(stages.size() == j.at("stage_peak_memory_bytes").size());
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const auto& m = stages[s];
        std::int64_t sum = 0;
        for (const char* part : {"weights_bytes", "gradients_bytes", "optimizer_state_bytes", "pipeline_buffers_bytes",
                                 "activations_bytes"})
            sum += m.at(part).get<std::int64_t>();
        CHECK(sum == m.at("peak_bytes").get<std::int64_t>());
        CHECK(m.at("peak_bytes") == j.at("stage_peak_memory_bytes")[s]);
    }
    const auto worst = j.at("memory").at("peak_stage").get<std::size_t>();
    CHECK(stages.at(worst).at("peak_bytes") == j.at("peak_memory_bytes"));
    const auto report = run_cli(with({"run", kDefault}, kSmall));
    CHECK(contains(report.out, "optimizer"));
    CHECK(contains(report.out, "activations"));
}

TEST_CASE("--memory-headroom: a fraction in [0, 1) for sweep and search, else exit 2 naming it", "[cli][main]") {
    for (const char* command : {"search", "sweep"})
        for (const char* bad : {"1", "1.5", "-0.1", "nan", "abc"}) {
            INFO(command << " --memory-headroom " << bad);
            const auto o = run_cli({command, kDefault, "--memory-headroom", bad});
            CHECK(o.code == 2);
            CHECK(contains(o.err, "memory-headroom"));
        }
    for (const char* command : {"run", "whatif"}) {
        const auto o = run_cli({command, kDefault, "--memory-headroom", "0.1"});
        CHECK(o.code == 2);
        CHECK(contains(o.err, "does not take --memory-headroom"));
    }
}
