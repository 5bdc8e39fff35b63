// cuboid-validate end to end without a GPU: --measured compares a saved run, --dry-run prints the
// plan, and a run without --measured on a machine without GPU says so with status 1.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "validate/cli/validate_main.hpp"
#include "validate/cuda/gpu_executor.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid::validate;
namespace fs = std::filesystem;

namespace {

struct Files {
    fs::path dir = cuboid::scratch::file("cuboid-validate-cli-test");
    fs::path scenario = dir / "s.yaml", measured = dir / "m.json", csv = dir / "c.csv";
    Files() {
        fs::create_directories(dir);
        std::ofstream(scenario) << "name: tiny-2gpu\nmodel: {layers: 2, hidden: 64, heads: 4, seq_len: 32, vocab: 128}\n"
                                   "cluster: {gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 2}\n"
                                   "training: {global_batch: 4, micro_batch: 1}\n"
                                   "parallel: {tensor: 1, pipeline: 2, data: 1}\n";
        std::ofstream(measured) << R"({"device": "synthetic", "gpus": 2, "iteration_time_s": 1.0,
                                       "peak_memory_bytes": 1e9})";
    }
    ~Files() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("--measured prints every row, the verdict, and writes the CSV") {
    const Files f;
    std::ostringstream out, err;
    const int rc = validate_main({f.scenario.string(), "--measured", f.measured.string(), "--csv", f.csv.string()},
                                 out, err);
    INFO(err.str());
    REQUIRE(rc == 0);
    CHECK(out.str().find("iteration time") != std::string::npos);
    CHECK(out.str().find("peak memory") != std::string::npos);
    // a tiny model cannot take one second per iteration on an H100: far off
    CHECK(out.str().find("verdict: off by more than 10%") != std::string::npos);
    std::ifstream csv(f.csv);
    std::string header;
    std::getline(csv, header);
    CHECK(header == "metric,unit,predicted,measured,relative_error");
}

TEST_CASE("--json - writes the comparison alone to standard output, the table to standard error") {
    const Files f;
    std::ostringstream out, err;
    REQUIRE(validate_main({f.scenario.string(), "--measured", f.measured.string(), "--json", "-"}, out, err) == 0);
    CHECK(out.str().front() == '{');  // JSON only: a reader can parse standard output as it is
    CHECK(out.str().find("\"verdict\"") != std::string::npos);
    CHECK(err.str().find("verdict: off by more than 10%") != std::string::npos);
    CHECK_FALSE(fs::exists("-"));  // not a file named "-"
    std::ostringstream out2, err2;
    CHECK(validate_main({f.scenario.string(), "--measured", f.measured.string(), "--json", "-", "--csv", "-"}, out2,
                        err2) == 2);
    CHECK(err2.str().find("cannot both write to standard output") != std::string::npos);
}

TEST_CASE("--dry-run needs no GPU; a real run without one exits with status 1") {
    const Files f;
    std::ostringstream out, err;
    CHECK(validate_main({f.scenario.string(), "--dry-run"}, out, err) == 0);
    CHECK(out.str().find("execution plan: 2 ranks") != std::string::npos);
    // Whether this machine has GPUs is not for the test to decide: only without one is the
    // status known.
    if (!gpu_executor_available()) CHECK(validate_main({f.scenario.string()}, out, err) == 1);
    CHECK(validate_main({f.scenario.string(), "--measured", (f.dir / "missing.json").string()}, out, err) == 2);
}

TEST_CASE("--timeout below one second is refused before anything runs") {
    const Files f;
    std::ostringstream out, err;
    CHECK(validate_main({f.scenario.string(), "--timeout", "0"}, out, err) == 2);
    CHECK(err.str().find("--timeout") != std::string::npos);
}

TEST_CASE("started by an MPI launcher, a build that cannot run under MPI says so with status 2") {
    // The launcher's variable is all cuboid-validate looks at; with MPI built in, a real MPI job
    // would be needed instead (the CTest validate_mpi_no_gpu), so only a build without it checks.
    if (mpi_executor_available()) return;
    const Files f;
    std::ostringstream out, err;
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    const int rc = validate_main({f.scenario.string()}, out, err);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    CHECK(rc == 2);
    CHECK(err.str().find("MPI launcher") != std::string::npos);
    CHECK(out.str().empty());
}
