// cuboid-bench-scaling: one training iteration per cluster size, each run as `cuboid run` does it
// (hardware model, program, pricing, simulation) in a process of its own, so that the peak
// memory of every point is its own: wall time, CPU time, peak resident memory and events, with
// folding off and on.
//
// The points are the scenario files of a directory (default bench/scenarios/gpt3-175b-scaling:
// GPT-3 175B, tensor 8 x pipeline 8, 32 micro-batches per pipeline, DGX A100 nodes on a fat tree,
// only the data-parallel degree changing), each named by its GPU count; --max-gpus skips the
// largest, --timeout stops a point that runs too long (its row then says so).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_main.hpp"
#include "strategies/cli/allocator_settings.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/run.hpp"

namespace {

struct Options {
    std::string directory = "bench/scenarios/gpt3-175b-scaling";
    long max_gpus = 131072;
    int timeout_s = 600;
    int repeat = 1;
    bool full = true;    // --folded-only: skip the runs without folding
    bool folded = true;  // --full-only: skip the folded runs
};

// What a child process reports back through its pipe.
struct ChildReport {
    std::uint64_t events = 0;
    std::uint64_t fingerprint = 0;
    double iteration_s = 0.0;
    double simulate_s = 0.0;
    double fold_factor = 1.0;
    int ok = 0;
};

struct Measured {
    ChildReport report;
    double wall_s = 0.0;
    double cpu_s = 0.0;     // user + system of the child
    long max_rss_kib = 0;   // the child's peak resident set
    bool timed_out = false;
};

Measured run_point(const std::string& file, bool fold, int timeout_s) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        close(fds[0]);
        alarm(static_cast<unsigned>(timeout_s));  // SIGALRM ends the child: the row reads "timeout"
        ChildReport r;
        try {
            const cuboid::Scenario sc = cuboid::cli::load_scenario_file(file, cuboid::cli::builtin_name_resolvers());
            cuboid::RunOptions options;
            options.fold = fold;
            const cuboid::RunResult result = cuboid::run_scenario(sc, options);
            r.events = result.sim_events;
            r.fingerprint = result.fingerprint;
            r.iteration_s = result.iteration_time_s;
            r.simulate_s = result.sim_wall_s;
            r.fold_factor = result.sim_fold_factor;
            r.ok = 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: %s\n", file.c_str(), e.what());
        }
        const ssize_t written = write(fds[1], &r, sizeof r);
        _exit(written == static_cast<ssize_t>(sizeof r) && r.ok ? 0 : 1);
    }
    close(fds[1]);
    Measured m;
    if (read(fds[0], &m.report, sizeof m.report) != static_cast<ssize_t>(sizeof m.report)) m.report.ok = 0;
    close(fds[0]);
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    m.max_rss_kib = usage.ru_maxrss;
    m.timed_out = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    return m;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print_point(long gpus, const std::string& file, bool fold, const Options& o) {
    std::vector<Measured> runs;
    for (int r = 0; r < o.repeat; ++r) {
        runs.push_back(run_point(file, fold, o.timeout_s));
        if (!runs.back().report.ok) break;
        if (runs.back().report.fingerprint != runs.front().report.fingerprint)
            throw std::runtime_error("fingerprint differs between runs of " + file);
    }
    const Measured& first = runs.front();
    const char* mode = fold ? "folded" : "full";
    if (!first.report.ok) {
        fmt::print("{:>7} {:>6}  {}\n", gpus, mode,
                   first.timed_out ? fmt::format("timeout after {} s", o.timeout_s) : std::string("failed"));
        std::fflush(stdout);
        return;
    }
    std::vector<double> wall, cpu, sim, rss;
    for (const Measured& m : runs) {
        wall.push_back(m.wall_s);
        cpu.push_back(m.cpu_s);
        sim.push_back(m.report.simulate_s);
        rss.push_back(static_cast<double>(m.max_rss_kib));
    }
    const double events = static_cast<double>(first.report.events);
    fmt::print("{:>7} {:>6} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.1f} {:>11} {:>9.2f} {:>7.1f} {:>12.6f}  0x{:016x}\n", gpus,
               mode, median(wall), median(cpu), median(sim), median(rss) / 1024.0, first.report.events,
               median(sim) / events * 1e9 / 1e3, first.report.fold_factor, first.report.iteration_s,
               first.report.fingerprint);
    std::fflush(stdout);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--max-gpus" && has_value) o.max_gpus = std::stol(argv[++i]);
        else if (a == "--timeout" && has_value) o.timeout_s = std::max(1, std::stoi(argv[++i]));
        else if (a == "--repeat" && has_value) o.repeat = std::max(1, std::stoi(argv[++i]));
        else if (a == "--full-only") o.folded = false;
        else if (a == "--folded-only") o.full = false;
        else if (a == "--help" || a == "-h") throw std::invalid_argument("");
        else if (a.rfind("--", 0) != 0) o.directory = a;
        else throw std::invalid_argument("unknown option '" + a + "'");
    }
    return o;
}

// The scenario files of `directory` by GPU count.
std::map<long, std::string> points_in(const std::string& directory) {
    std::map<long, std::string> points;
    const auto names = cuboid::cli::builtin_name_resolvers();
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
        if (entry.path().extension() != ".yaml") continue;
        const cuboid::Scenario sc = cuboid::cli::load_scenario_file(entry.path().string(), names);
        points.emplace(sc.cluster.gpus(), entry.path().string());
    }
    return points;
}

}  // namespace

int main(int argc, char** argv) {
    cuboid::cli::restart_with_huge_pages(argv);
    cuboid::cli::keep_freed_memory_for_reuse();  // as cuboid itself: the points run as cuboid run does
    return cuboid::bench::run_main(
        "cuboid-bench-scaling [DIRECTORY] [--max-gpus N] [--timeout S] [--repeat N] [--full-only | --folded-only]",
        [&] {
            const Options o = parse(argc, argv);
            const auto points = points_in(o.directory);
            fmt::print("# cuboid-bench-scaling: {}; each run a process of its own, medians of {} (seconds, MiB)\n",
                       o.directory, o.repeat);
            fmt::print("# wall, cpu: the whole run (hardware model, program, pricing, simulation); simulate: "
                       "sim::simulate\n");
            fmt::print("{:>7} {:>6} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>7} {:>12}  {}\n", "gpus", "mode", "wall_s",
                       "cpu_s", "simulate", "rss_MiB", "events", "us/event", "fold", "iteration_s", "fingerprint");
            for (const auto& [gpus, file] : points) {
                if (gpus > o.max_gpus) continue;
                if (o.full) print_point(gpus, file, false, o);
                if (o.folded) print_point(gpus, file, true, o);
            }
        });
}
