// Every error path of the scenario loader names the file, the line and the key, and says what
// is allowed; a valid file fills the Scenario with preset-then-override precedence.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "strategies/cli/scenario_loader.hpp"
#include "tests/cli/loader_fixtures.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {

Scenario load(const std::string& text) { return load_scenario_text(text, "t.yaml", ".", fake_names()); }

InputError load_error(const std::string& text) {
    return input_error_of([&] { load(text); });
}

// `text` is refused at t.yaml:`line`, key `key`, with a message containing `says`.
void check_load_error(const std::string& text, int line, const std::string& key, const std::string& says) {
    const InputError e = load_error(text);
    check_located(e, "t.yaml", line, key);
    CHECK(contains(e.what(), says));
}

// Line numbers below count the lines of the literal, starting at 1 on the first key.
const std::string kValid =
    "name: small\n"                   // 1
    "model:\n"                        // 2
    "  hidden: 512\n"                 // 3: before the preset in the file, still wins over it
    "  preset: tiny\n"                // 4
    "cluster:\n"                      // 5
    "  nodes: 2\n"                    // 6
    "  inter_node:\n"                 // 7
    "    nic_gbps: 400\n"             // 8
    "    oversubscription: 2\n"       // 9
    "training:\n"                     // 10
    "  global_batch: 64\n"            // 11
    "  tokens: 300e9\n"               // 12
    "  precision: fp16\n"             // 13
    "parallel:\n"                     // 14
    "  tensor: 8\n"                   // 15
    "  schedule: interleaved\n"       // 16
    "  dp_overlap: false\n"           // 17
    "sweep:\n"                        // 18
    "  parallel.pipeline: [1, 2]\n";  // 19

}  // namespace

TEST_CASE("a valid file fills every key it names and records their lines", "[cli][loader]") {
    const Scenario s = load(kValid);
    CHECK(s.name == "small");
    CHECK(s.model.preset == "tiny");
    CHECK(s.model.hidden == 512);  // explicit key beats the preset's 256
    CHECK(s.model.layers == 4);    // from the preset
    CHECK(s.cluster.nodes == 2);
    CHECK(s.cluster.nic_gbps == 400.0);
    CHECK(s.cluster.oversubscription == 2.0);
    CHECK(s.training.tokens == Approx(3e11));
    CHECK(s.training.precision == sim::Precision::Fp16);
    CHECK(s.parallel.tensor == 8);
    CHECK(s.parallel.data == 0);  // absent: derived later from the GPU count
    CHECK(s.parallel.schedule == Schedule::Interleaved);
    CHECK_FALSE(s.parallel.dp_overlap);
    REQUIRE(s.sweep.size() == 1);
    CHECK(s.sweep[0].first == "parallel.pipeline");
    CHECK(s.sweep[0].second == std::vector<std::string>{"1", "2"});
    CHECK(s.key_lines.at("model.hidden") == 3);
    CHECK(s.key_lines.at("cluster.inter_node.oversubscription") == 9);
    CHECK(s.key_lines.at("parallel.schedule") == 16);
    CHECK_NOTHROW(check_complete(s));
}

TEST_CASE("the name defaults to the file's stem", "[cli][loader]") {
    const Scenario s = load_scenario_text("model:\n  preset: tiny\n", "dir/my-run.yaml", "dir", fake_names());
    CHECK(s.name == "my-run");
}

TEST_CASE("a missing file is reported with its path", "[cli][loader]") {
    const auto e = input_error_of([] { load_scenario_file("no/such/file.yaml", fake_names()); });
    CHECK(e.where().file == "no/such/file.yaml");
    CHECK(contains(e.what(), "cannot open"));
}

TEST_CASE("a YAML syntax error carries yaml-cpp's line", "[cli][loader]") {
    // Line 3 opens a flow sequence that never closes; yaml-cpp reports the line it stopped at.
    const auto e = load_error("model:\n  layers: 4\n  hidden: [1, 2\ntraining:\n  global_batch: 8\n");
    CHECK(e.where().file == "t.yaml");
    CHECK(e.where().line >= 3);
    CHECK(contains(e.what(), "YAML syntax error"));
}

TEST_CASE("an unknown key lists the section's keys and suggests the nearest", "[cli][loader]") {
    const auto e = load_error("parallel:\n  tensor: 2\n  pipline: 2\n");
    check_located(e, "t.yaml", 3, "parallel.pipline");
    CHECK(contains(e.what(), "unknown key 'pipline' in 'parallel'; allowed: tensor, pipeline, data"));
    CHECK(contains(e.what(), "did you mean 'pipeline'?"));
}

TEST_CASE("an unknown top-level section lists the sections", "[cli][loader]") {
    const auto e = load_error("name: x\nclustre:\n  nodes: 2\n");
    check_located(e, "t.yaml", 2, "clustre");
    CHECK(contains(e.what(), "did you mean 'cluster'?"));
    CHECK(contains(e.what(), "model, cluster, training, parallel, cost, reliability, sweep"));
}

TEST_CASE("a value of the wrong type says what was expected", "[cli][loader]") {
    check_load_error("parallel:\n  tensor: abc\n", 2, "parallel.tensor", "expected an integer, got 'abc'");
    check_load_error("parallel:\n  dp_overlap: maybe\n", 2, "parallel.dp_overlap", "expected true or false");
    check_load_error("parallel:\n  tensor: [1, 2]\n", 2, "parallel.tensor", "got a list");
    check_load_error("model: gpt\n", 1, "model", "expected a map");
}

TEST_CASE("values out of range name the bound", "[cli][loader]") {
    check_located(load_error("parallel:\n  tensor: 0\n"), "t.yaml", 2, "parallel.tensor");
    CHECK(contains(load_error("parallel:\n  tensor: 0\n").what(), "must be >= 1, got 0"));
    check_load_error("cluster:\n  inter_node:\n    oversubscription: 0.5\n",
                     3, "cluster.inter_node.oversubscription", "must be between 1 and 1000");
    const auto mb = load_error("training:\n  micro_batch: -2\n");
    check_located(mb, "t.yaml", 2, "training.micro_batch");
    check_load_error("parallel:\n  zero_stage: 4\n", 2, "parallel.zero_stage", "between 0 and 3");
    const auto t = load_error("training:\n  tokens: -1e9\n");
    check_located(t, "t.yaml", 2, "training.tokens");
}

TEST_CASE("an unknown enumerated name lists the allowed names", "[cli][loader]") {
    check_load_error("training:\n  precision: fp12\n", 2, "training.precision", "fp32, tf32, fp16, bf16, fp8");
    const auto s = load_error("parallel:\n  schedule: 1f2b\n");
    check_located(s, "t.yaml", 2, "parallel.schedule");
    CHECK(contains(s.what(), "gpipe, 1f1b, interleaved, shifted-critical-path, zb-h1, zb-v, dualpipev"));
    CHECK(contains(s.what(), "did you mean '1f1b'?"));
    check_load_error("cluster:\n  inter_node:\n    topology: torus\n",
                     3, "cluster.inter_node.topology", "fat-tree, rail-optimized, single-switch");
}

TEST_CASE("an unknown preset or GPU gets the location of the key", "[cli][loader]") {
    check_load_error("name: x\nmodel:\n  preset: huge\n", 3, "model.preset", "known: tiny");
    CHECK(load("cluster:\n  gpu: a100\n").cluster.gpu == "a100-sxm-80gb");  // alias -> catalog name
    check_load_error("cluster:\n  gpu: a1000\n", 2, "cluster.gpu", "known: a100-sxm-80gb");
}

TEST_CASE("a duplicate key is an error naming the first line", "[cli][loader]") {
    check_load_error("parallel:\n  tensor: 2\n  tensor: 4\n", 3, "parallel.tensor", "line 2");
}

TEST_CASE("sweep axes must be known keys with non-empty lists of valid values", "[cli][loader]") {
    check_load_error("sweep:\n  parallel.tensr: [1, 2]\n",
                     2, "sweep.parallel.tensr", "did you mean 'parallel.tensor'?");
    check_load_error("sweep:\n  parallel.tensor: []\n", 2, "sweep.parallel.tensor", "non-empty list");
    check_load_error("sweep:\n  parallel.tensor:\n    - 1\n    - two\n",
                     4, "sweep.parallel.tensor", "expected an integer, got 'two'");
    // A list-valued key sweeps over lists, each checked like the key itself.
    const Scenario lists = load("sweep:\n  parallel.recompute_modules: [[core_attn], [core_attn, mla_up_proj]]\n"
                                "  parallel.atp_mesh: [[4, 2], [2, 4]]\n");
    REQUIRE(lists.sweep.size() == 2);
    CHECK(lists.sweep[0].second == std::vector<std::string>{"core_attn", "core_attn,mla_up_proj"});
    CHECK(lists.sweep[1].second == std::vector<std::string>{"4,2", "2,4"});
    check_load_error("sweep:\n  parallel.recompute_modules:\n    - [core_attn]\n    - [shared_expert]\n",
                     4, "sweep.parallel.recompute_modules", "unknown module 'shared_expert'");
    // A scalar key still takes single values only.
    check_load_error("sweep:\n  parallel.tensor: [[1, 2]]\n",
                     2, "sweep.parallel.tensor", "expected a single integer, got a list");
    // A value given twice would make rows nothing tells apart: refused at its second line.
    check_load_error("sweep:\n  parallel.tensor:\n    - 2\n    - 4\n    - 2\n", 5, "sweep.parallel.tensor",
                     "'2' is listed twice");
    check_load_error("sweep:\n  parallel.atp_mesh: [[4, 2], [4, 2]]\n", 2, "sweep.parallel.atp_mesh",
                     "'4,2' is listed twice");
}

TEST_CASE("missing model dimensions or batch are reported after loading", "[cli][loader]") {
    const Scenario s = load("model:\n  layers: 2\ntraining:\n  micro_batch: 1\n");
    const auto e = input_error_of([&] { check_complete(s); });
    // The hidden size is absent: the error points at the model section (line 1).
    check_located(e, "t.yaml", 1, "model.hidden");
    CHECK(contains(e.what(), "model.preset"));
    Scenario with_model = load("model:\n  preset: tiny\ntraining:\n  micro_batch: 1\n");
    check_located(input_error_of([&] { check_complete(with_model); }), "t.yaml", 3, "training.global_batch");
}

TEST_CASE("a profile path is taken from the scenario's folder and must exist", "[cli][loader]") {
    const auto dir = cuboid::scratch::file("cuboid_cli_profile_test");
    std::filesystem::create_directories(dir / "profiles");
    std::ofstream(dir / "profiles" / "p.yaml") << "gpu: a100-sxm-80gb\n";
    std::ofstream(dir / "s.yaml") << "cluster:\n  profile: profiles/p.yaml\n";
    const Scenario s = load_scenario_file((dir / "s.yaml").string(), fake_names());
    REQUIRE(s.cluster.profile);
    CHECK(std::filesystem::equivalent(*s.cluster.profile, dir / "profiles" / "p.yaml"));
    const auto e = load_error("cluster:\n  profile: profiles/none.yaml\n");
    check_located(e, "t.yaml", 2, "cluster.profile");
    std::filesystem::remove_all(dir);
}

TEST_CASE("a file with several YAML documents is an error", "[cli][loader]") {
    // The second document starts on line 3, after the '---' separator.
    const auto e = load_error("name: a\n---\nname: b\n");
    CHECK(e.where().file == "t.yaml");
    CHECK(e.where().line == 3);
    CHECK(contains(e.what(), "2 YAML documents"));
}

TEST_CASE("text must be UTF-8, as names reach JSON and CSV outputs", "[cli][loader]") {
    const auto e = load_error("model:\n  preset: tiny\nname: \"caf\xE9\"\n");
    check_located(e, "t.yaml", 3, "name");
    CHECK(contains(e.what(), "t.yaml:3: 'name': not valid UTF-8 (byte 0xE9 at column 11)"));
    CHECK(load("name: \"caf\xC3\xA9\"\n").name == "caf\xC3\xA9");
}

TEST_CASE("a double quote left open on the last line is an error", "[cli][loader]") {
    const auto e = load_error("model:\n  preset: tiny\nname: \"small\n");
    check_located(e, "t.yaml", 3, "name");
    CHECK(contains(e.what(), "never closed"));
}

TEST_CASE("bandwidths lie between 1 bit/s and 1 Pbit/s, prices and powers below physical bounds", "[cli][loader]") {
    const std::pair<std::string, std::string> cases[] = {
        {"cluster:\n  intra_node_gbps: 1e-320\n", "cluster.intra_node_gbps"},
        {"cluster:\n  intra_node_gbps: 2e5\n", "cluster.intra_node_gbps"},
        {"cluster:\n  inter_node:\n    nic_gbps: 1e-320\n", "cluster.inter_node.nic_gbps"},
        {"cluster:\n  inter_node:\n    nic_gbps: 2e6\n", "cluster.inter_node.nic_gbps"},
        {"cluster:\n  inter_node:\n    oversubscription: 1e300\n", "cluster.inter_node.oversubscription"},
        {"cost:\n  gpu_hour_usd: 1e308\n", "cost.gpu_hour_usd"},
        {"cost:\n  node_power_kw: 1e308\n", "cost.node_power_kw"},
        {"training:\n  tokens: 1e300\n", "training.tokens"},
        {"cost:\n  gpu_hour_usd: .nan\n", "cost.gpu_hour_usd"},
        {"cost:\n  node_power_kw: .inf\n", "cost.node_power_kw"},
        {"cost:\n  gpu_purchase_usd: -1\n", "cost.gpu_purchase_usd"},
        {"cost:\n  gpu_purchase_usd: 1e9\n", "cost.gpu_purchase_usd"},
        {"cost:\n  power_usd_per_kwh: 20\n", "cost.power_usd_per_kwh"},
        {"cost:\n  pue: 0.9\n", "cost.pue"},
        {"cost:\n  amortisation_years: 0\n", "cost.amortisation_years"},
        {"cost:\n  utilisation: 0\n", "cost.utilisation"},
        {"cost:\n  utilisation: 1.5\n", "cost.utilisation"},
        {"cost:\n  utilisation: many\n", "cost.utilisation"},
    };
    for (const auto& [text, key] : cases) {
        INFO(text);
        const auto e = load_error(text);
        CHECK(e.where().key == key);
        CHECK(e.where().line >= 2);
    }
    const Scenario ok = load("cluster:\n  intra_node_gbps: 1.25e-10\n  inter_node:\n    nic_gbps: 1e6\n");
    CHECK(ok.cluster.nic_gbps == 1e6);
}

TEST_CASE("ATP's mesh and order are refused when the tensor mode is not atp", "[cli][loader]") {
    const auto mesh = input_error_of([] { check_no_ignored_keys(load("parallel:\n  tensor: 8\n  atp_mesh: [4, 2]\n")); });
    check_located(mesh, "t.yaml", 3, "parallel.atp_mesh");
    CHECK(contains(mesh.what(), "tensor_mode: atp"));
    const auto order = input_error_of([] { check_no_ignored_keys(load("parallel:\n  atp_order: row-first\n")); });
    check_located(order, "t.yaml", 2, "parallel.atp_order");
    CHECK_NOTHROW(check_no_ignored_keys(load("parallel:\n  tensor_mode: atp\n  atp_mesh: [4, 2]\n")));
    // A sweep over the tensor mode that includes atp keeps them for its atp points.
    CHECK_NOTHROW(check_no_ignored_keys(load("parallel:\n  atp_mesh: [4, 2]\nsweep:\n  parallel.tensor_mode: [1d, atp]\n")));
}

TEST_CASE("a partition method beside explicit stage layers is refused: it would do nothing", "[cli][loader]") {
    const auto e = input_error_of(
        [] { check_no_ignored_keys(load("parallel:\n  pipeline: 2\n  stage_layers: [2, 2]\n  partition: uniform\n")); });
    check_located(e, "t.yaml", 4, "parallel.partition");
    CHECK(contains(e.what(), "stage_layers"));
    CHECK_NOTHROW(check_no_ignored_keys(load("parallel:\n  pipeline: 2\n  stage_layers: [2, 2]\n")));
    CHECK_NOTHROW(check_no_ignored_keys(load("parallel:\n  partition: uniform\n")));
}
