// The built-in launcher: one process per rank on this machine's GPUs (rank r on device r), NCCL
// bootstrapped through a folder of id files, a watchdog on the ranks (--timeout). The parent
// process never touches CUDA: a CUDA context does not survive fork(), so the device count is
// asked by a short-lived child as well.
#include "validate/cuda/gpu_executor.hpp"

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/output_file.hpp"
#include "validate/cuda/rank_runner.hpp"
#include "validate/cuda/rank_wait.hpp"

namespace cuboid::validate {
namespace {

namespace fs = std::filesystem;

// Visible CUDA devices, asked in a child process (exit status = the count, capped at 250).
int probe_devices() {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        int n = 0;
        _exit(cudaGetDeviceCount(&n) == cudaSuccess ? std::min(n, 250) : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

std::string make_dir(const std::string& wanted) {
    if (!wanted.empty()) {
        fs::create_directories(wanted);
        for (const auto& e : fs::directory_iterator(wanted))  // ids of an earlier run would mislead
            if (e.path().extension() == ".id" || e.path().extension() == ".json") fs::remove(e.path());
        return wanted;
    }
    std::string tmpl = (fs::temp_directory_path() / "cuboid-validate-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a folder in " + fs::temp_directory_path().string());
    return tmpl;
}

[[noreturn]] void rank_process(const sim::Program& program, const ExecutionPlan& plan, std::uint32_t rank,
                               const std::string& dir, const ExecutorOptions& options) {
    try {
        const gpu::FileBootstrap boot(dir);
        const RankMeasurement m = gpu::run_rank(program, plan, rank, static_cast<int>(rank), boot, options);
        // Written whole or not at all: the parent reads a missing file as this rank's failure.
        sim::write_output_file((fs::path(dir) / ("rank-" + std::to_string(rank) + ".json")).string(), to_json(m).dump());
        _exit(0);
    } catch (const std::exception& e) {
        std::cerr << "cuboid-validate: rank " << rank << ": " << e.what() << "\n";
        _exit(1);
    }
}

// Every rank finished, or the job fails naming the rank that failed or the ones that hung.
void wait_all(const std::vector<pid_t>& children, int timeout_s) {
    const RankWaitOutcome w = wait_for_ranks(children, std::chrono::seconds(timeout_s));
    if (w.first_failed)
        throw std::runtime_error("rank process " + std::to_string(*w.first_failed) + " failed (its message is above)");
    if (!w.unfinished.empty())
        throw std::runtime_error(rank_list(w.unfinished) + " did not finish within --timeout " +
                                 std::to_string(timeout_s) +
                                 " s (killed): a hang (try NCCL_LAUNCH_MODE=GROUP), or raise --timeout");
}

}  // namespace

bool gpu_executor_available() { return true; }

Figures run_on_gpus(const sim::Program& program, const ExecutionPlan& plan, const ExecutorOptions& options) {
    const auto ranks = static_cast<int>(program.ranks.size());
    const int devices = probe_devices();
    if (devices == 0) throw NoGpuError("no CUDA device available (no driver, or CUDA_VISIBLE_DEVICES empty)");
    if (ranks > devices)
        throw NoGpuError("the program has " + std::to_string(ranks) + " ranks and this machine " +
                         std::to_string(devices) + " GPUs; validate a scenario with at most that many GPUs");
    const std::string dir = make_dir(options.bootstrap_dir);
    std::cout.flush();
    std::cerr.flush();
    std::vector<pid_t> children;
    for (int r = 0; r < ranks; ++r) {
        const pid_t pid = fork();
        if (pid < 0) throw std::runtime_error("fork failed");
        if (pid == 0) rank_process(program, plan, static_cast<std::uint32_t>(r), dir, options);
        children.push_back(pid);
    }
    wait_all(children, options.timeout_s);
    std::vector<RankMeasurement> measured;
    for (int r = 0; r < ranks; ++r) {
        std::ifstream in(fs::path(dir) / ("rank-" + std::to_string(r) + ".json"));
        measured.push_back(rank_measurement_from_json(nlohmann::json::parse(in)));
    }
    if (options.bootstrap_dir.empty()) fs::remove_all(dir);
    return aggregate(program, measured);
}

}  // namespace cuboid::validate
