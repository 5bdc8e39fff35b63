// `cuboid search` and `cuboid whatif` as separate processes: a signal, --time-limit or
// --max-memory stops them with what they found written, marked partial, and a what-if study
// writes each pair's row as soon as that pair's search ends.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/scratch_dir.hpp"

using nlohmann::json;

namespace {

struct Run {
    int code = -1;
    std::string err;
    double wall_s = 0.0;
};

std::string slurp(const std::string& p) {
    std::ifstream f(p);
    return {std::istreambuf_iterator<char>(f), {}};
}

std::string temp(const std::string& name) {
    return (cuboid::scratch::file("cuboid-long-work-" + std::to_string(getpid()) + "-" + name))
        .string();
}

Run shell(const std::string& command) {
    const std::string err_path = temp("err");
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system((command + " > /dev/null 2> '" + err_path + "'").c_str());
    Run r;
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(err_path);
    return r;
}

const std::string kBinary = std::string("'") + CUBOID_BINARY + "' ";

// 16 DGX A100 nodes (128 GPUs): the second pair of the study below.
constexpr const char* kCluster128 =
    "{gpu: a100-sxm-80gb, nodes: 16, gpus_per_node: 8, intra_node: nvswitch, "
    "inter_node: {kind: infiniband, nic_gbps: 200, nics_per_node: 8, topology: fat-tree}";

// GPT 7.5B on 128 DGX A100 nodes (1,024 GPUs) with the default space: about half a minute on
// two cores (the search of 128 GPUs takes under 2 s since the bounds and folding got faster),
// so every stop below finds it running.
std::string search_scenario() {
    const std::string path = temp("search.yaml");
    std::ofstream(path) << "name: long-search\nmodel: {preset: gpt-7.5b}\ncluster: "
                        << "{gpu: a100-sxm-80gb, nodes: 128, gpus_per_node: 8, intra_node: nvswitch, "
                           "inter_node: {kind: infiniband, nic_gbps: 200, nics_per_node: 8, topology: fat-tree}}"
                        << "\ntraining: {global_batch: 512}\n";
    return path;
}

// Two pairs: GPT 7.5B on one node of eight A100s (a few seconds), then on the 128 GPUs above.
std::string study() {
    const std::string path = temp("study.yaml");
    std::ofstream(path) << "name: long-study\nsearch: {tensor: [4, 8], pipeline: [1, 2], micro_batch: [1]}\n"
                           "models:\n  - {name: gpt, preset: gpt-7.5b, tokens: 1e9, global_batch: 512}\n"
                           "clusters:\n"
                           "  - {name: one-node, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvswitch, "
                           "gpu_hour_usd: 2.0, node_overhead_w: 3300}\n"
                           "  - {name: sixteen, gpu: a100-sxm-80gb, nodes: 16, gpus_per_node: 8, intra_node: nvswitch, "
                           "inter_node: {kind: infiniband, nic_gbps: 200, nics_per_node: 8, topology: fat-tree}, "
                           "gpu_hour_usd: 2.0, node_overhead_w: 3300}\n";
    return path;
}

// Runs `command` in the background, waits until `ready` holds for it (a shell test on $pid),
// sends SIGTERM and waits for it.
Run terminated_when(const std::string& command, const std::string& ready) {
    const std::string script = temp("term.sh");
    std::ofstream(script) << command << " &\npid=$!\n"
                          << "for i in $(seq 1200); do\n  " << ready << " && break\n  sleep 0.05\ndone\n"
                          << "kill -TERM $pid\nwait $pid\n";
    return shell("sh '" + script + "'");
}

// SIGTERM is caught (bit 14 of SigCgt): the command has installed its handler.
const std::string kCatchesTerm =
    "[ $(( 0x$(awk '/^SigCgt/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0) & 0x4000 )) -ne 0 ]";

}  // namespace

TEST_CASE("SIGTERM stops a search: the plans so far, marked partial, exit 143", "[long-work]") {
    const std::string out = temp("term-search.json");
    std::filesystem::remove(out);
    const Run r = terminated_when(kBinary + "search '" + search_scenario() + "' --threads 1 --quiet --json '" + out + "'",
                                  kCatchesTerm + " && sleep 1");
    INFO(r.err);
    CHECK(r.code == 143);  // 128 + SIGTERM (15)
    CHECK(r.err.find("interrupted by SIGTERM") != std::string::npos);
    const json j = json::parse(slurp(out));
    CHECK(j.at("search").at("partial") == true);
    CHECK(j.at("search").at("reason") == "interrupted by SIGTERM");
    CHECK(j.at("search").at("not_reached").get<int>() > 0);
}

TEST_CASE("--time-limit stops a search and writes the plans found, marked partial", "[long-work]") {
    const std::string out = temp("limit-search.json");
    const Run r = shell(kBinary + "search '" + search_scenario() + "' --threads 2 --quiet --time-limit 3 --json '" +
                        out + "'");
    INFO(r.err);
    // 0 when a plan that fits was found in time; 5 when none was (a loaded machine may not finish
    // the first plan of 1,024 GPUs in 3 s): never "no plan is valid", which the search cannot know.
    CHECK((r.code == 0 || r.code == 5));
    CHECK(r.err.find("search stopped: time limit of 3 s reached") != std::string::npos);
    CHECK(r.err.find("no plan of the search space is valid") == std::string::npos);
    const json j = json::parse(slurp(out));
    CHECK(j.at("search").at("partial") == true);
    CHECK(j.at("search").at("reason") == "time limit of 3 s reached");
    // Written at the limit, not after the whole search (a minute): the simulations in flight
    // are abandoned (a plan of 1,024 GPUs takes well under 10 s to reach its next stopping point).
    CHECK(r.wall_s < 20.0);
}

TEST_CASE("a search stopped before any plan fit says so and exits 5, not 'no valid plan'", "[long-work]") {
    const std::string out = temp("limit0-search.json");
    const Run r = shell(kBinary + "search '" + search_scenario() + "' --threads 1 --quiet --time-limit 0.001 --json '" +
                        out + "'");
    INFO(r.err);
    CHECK(r.code == 5);
    CHECK(r.err.find("the search stopped before any plan fit") != std::string::npos);
    CHECK(r.err.find("not reached") != std::string::npos);
    const json j = json::parse(slurp(out));
    CHECK(j.at("search").at("partial") == true);
    CHECK(j.at("plans").empty());
}

TEST_CASE("whatif writes each pair's row as soon as it is done; SIGTERM keeps them, marked partial",
          "[long-work]") {
    const std::string csv = temp("term-whatif.csv"), json_file = temp("term-whatif.json");
    std::filesystem::remove(csv);
    std::filesystem::remove(json_file);
    // The signal comes once the first pair's row is in the CSV file, while the second pair runs.
    const Run r = terminated_when(kBinary + "whatif '" + study() + "' --threads 1 --quiet --csv '" + csv +
                                      "' --json '" + json_file + "'",
                                  "grep -q '^one-node,' '" + csv + "' 2>/dev/null");
    INFO(r.err);
    CHECK(r.code == 143);
    const std::string text = slurp(csv);
    INFO(text);
    CHECK(text.rfind("# partial: 1 of 2 pairs done (interrupted by SIGTERM)\n", 0) == 0);
    CHECK(text.find("\none-node,gpt,a100-sxm-80gb,8,1,") != std::string::npos);
    const json j = json::parse(slurp(json_file));
    CHECK(j.at("partial") == true);
    CHECK(j.at("pairs_done") == 1);
    CHECK(j.at("pairs_total") == 2);
    REQUIRE(j.at("rows").size() >= 1u);
    CHECK(j.at("rows")[0].at("status") == "ok");
}

TEST_CASE("whatif --max-memory below what the process holds stops before any pair", "[long-work]") {
    const std::string csv = temp("memory-whatif.csv");
    const Run r = shell(kBinary + "whatif '" + study() + "' --quiet --max-memory 0.001 --csv '" + csv + "'");
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.err.find("whatif stopped: memory limit of 0.001 GiB reached") != std::string::npos);
    CHECK(slurp(csv).rfind("# partial: 0 of 2 pairs done (memory limit of 0.001 GiB reached (", 0) == 0);
}

TEST_CASE("bad --time-limit values and commands that do not take it are refused with exit 2", "[long-work]") {
    for (const char* bad : {"0", "-5", "inf"}) {
        const Run r = shell(kBinary + "search '" + search_scenario() + "' --time-limit " + bad);
        INFO(bad << ": " << r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find("'--time-limit': expected a positive number of seconds") != std::string::npos);
    }
    const Run run = shell(kBinary + "run '" + search_scenario() + "' --time-limit 5");
    CHECK(run.code == 2);
    CHECK(run.err.find("does not take --time-limit") != std::string::npos);
    const Run whatif = shell(kBinary + "whatif '" + study() + "' --time-limit 0");
    CHECK(whatif.code == 2);
    CHECK(whatif.err.find("--time-limit") != std::string::npos);
}
