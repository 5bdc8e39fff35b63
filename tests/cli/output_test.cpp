// No result lost by the built `cuboid`: an output that cannot be written (a full device, a file
// that cannot be replaced, standard output on a full disk) is exit 4 with the path and the reason,
// and a run that fails on its input leaves the files its options name as they were.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace {

struct Exit {
    int code = -1;
    std::string err;
};

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    return {std::istreambuf_iterator<char>(f), {}};
}

fs::path temp(const std::string& name) {
    return cuboid::scratch::file("cuboid-output-test-" + std::to_string(getpid()) + "-" + name);
}

// `args` through the shell: it may redirect standard output ("> /dev/full").
Exit shell(const std::string& args) {
    const fs::path err = temp("stderr");
    const std::string command = std::string("'") + CUBOID_BINARY + "' " + args + " 2> '" + err.string() + "'";
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
}

const std::string kRun = "run '" + std::string(CUBOID_SOURCE_DIR) + "/scenarios/default.yaml' ";

std::string two_point_sweep() {
    const fs::path path = temp("sweep.yaml");
    std::ofstream(path) << "name: two\nmodel:\n  preset: gpt-7.5b\ncluster:\n  gpu: a100-sxm-40gb\n  nodes: 1\n"
                           "  gpus_per_node: 8\ntraining:\n  global_batch: 16\nparallel:\n  tensor: 4\n  pipeline: 2\n"
                           "sweep:\n  parallel.tensor: [4, 8]\n";
    return "sweep '" + path.string() + "' --threads 1 ";
}

}  // namespace

TEST_CASE("cuboid run: every output on a full device is exit 4 naming it", "[cli][binary][output]") {
    for (const std::string& args : {kRun + "--json /dev/full -q", kRun + "--trace /dev/full -q"}) {
        INFO(args);
        const Exit e = shell(args + " > /dev/null");
        CHECK(e.code == 4);
        CHECK(e.err == "cuboid: error: cannot write /dev/full: No space left on device\n");
    }
    for (const std::string& args : {kRun + "--json -", kRun}) {
        INFO(args);
        const Exit e = shell(args + " > /dev/full");
        CHECK(e.code == 4);
        CHECK(e.err == "cuboid: error: cannot write standard output: No space left on device\n");
    }
}

TEST_CASE("cuboid run --json on a file that cannot be replaced is exit 4", "[cli][binary][output]") {
    const Exit e = shell(kRun + "--json /proc/version -q");
    CHECK(e.code == 4);
    CHECK(e.err.rfind("cuboid: error: cannot write /proc/version: ", 0) == 0);
}

TEST_CASE("cuboid sweep: every output on a full device is exit 4 naming it", "[cli][binary][output]") {
    const std::string sweep = two_point_sweep();
    for (const std::string& args : {sweep + "--csv /dev/full --quiet", sweep + "--json /dev/full --quiet"}) {
        INFO(args);
        const Exit e = shell(args + " > /dev/null");
        CHECK(e.code == 4);
        CHECK(e.err == "cuboid: error: cannot write /dev/full: No space left on device\n");
    }
    for (const std::string& args : {sweep, sweep + "--csv -", sweep + "--json -"}) {
        INFO(args);
        const Exit e = shell(args + " > /dev/full");
        CHECK(e.code == 4);
        CHECK(e.err == "cuboid: error: cannot write standard output: No space left on device\n");
    }
}

TEST_CASE("an input error leaves the existing outputs byte for byte", "[cli][binary][output]") {
    const fs::path bad = temp("bad.yaml"), json = temp("old.json"), trace = temp("old.trace"), csv = temp("old.csv");
    std::ofstream(bad) << "name: bad\nmodel:\n  preset: gpt-7.5b\nparallel:\n  tensor: [\n";
    for (const fs::path& p : {json, trace, csv}) std::ofstream(p) << "the result of an earlier run\n";
    const std::string outputs = "--json '" + json.string() + "' --trace '" + trace.string() + "'";
    const Exit run = shell("run '" + bad.string() + "' " + outputs);
    CHECK(run.code == 2);
    const Exit sweep = shell("sweep '" + bad.string() + "' --json '" + json.string() + "' --csv '" + csv.string() + "'");
    CHECK(sweep.code == 2);
    const Exit set = shell(kRun + "--set parallel.tensor=3 " + outputs);
    CHECK(set.code == 2);  // found while running, after the outputs were opened
    for (const fs::path& p : {json, trace, csv}) {
        INFO(p);
        CHECK(slurp(p) == "the result of an earlier run\n");
    }
    // Nothing left beside them: the temporaries of the outputs opened before the error are gone.
    std::size_t ours = 0;
    for (const auto& entry : fs::directory_iterator(cuboid::scratch::folder()))
        ours += entry.path().filename().string().find("cuboid-output-test-" + std::to_string(getpid()) + "-old") !=
                std::string::npos;
    CHECK(ours == 3);
}
