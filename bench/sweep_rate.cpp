// cuboid-bench-sweep: points per second of `cuboid sweep` on a sweep of 1,024-GPU plans, with 1
// and 2 threads (medians of --repeat runs, each with a fresh hardware cache as a sweep starts
// with), then where one point's time goes, phase by phase, on one thread.
//
//   cuboid-bench-sweep [SCENARIO.yaml] [--repeat N] [--threads 1,2] [--profile-points N] [--no-fold]
//
// Points are simulated symmetry-folded, as `cuboid sweep` does (--no-fold: every rank).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "strategies/cli/allocator_settings.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/json_result.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/sweep_runner.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_symmetry.hpp"
#include "strategies/run.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace cuboid;

struct Options {
    std::string scenario = "bench/scenarios/sweep-gpt3-175b-1024.yaml";
    int repeat = 3;
    std::vector<int> threads{1, 2};
    std::size_t profile_points = 4;
    bool fold = true;
    bool help = false;
};

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--help" || a == "-h") o.help = true;
        else if (a == "--no-fold") o.fold = false;
        else if (a.starts_with("-") && a != "--repeat" && a != "--profile-points" && a != "--threads")
            throw std::invalid_argument("unknown option '" + a + "'");
        if (a == "--repeat" && has_value) o.repeat = std::max(1, std::atoi(argv[++i]));
        else if (a == "--profile-points" && has_value) o.profile_points = static_cast<std::size_t>(std::atoi(argv[++i]));
        else if (a == "--threads" && has_value) {
            o.threads.clear();
            for (const char* p = argv[++i]; *p;) {
                o.threads.push_back(std::max(1, std::atoi(p)));
                while (*p && *p != ',') ++p;
                if (*p == ',') ++p;
            }
        } else if (a != "--no-fold") o.scenario = a;
    }
    return o;
}

// The whole sweep, as `cuboid sweep` runs it (hardware built once per cluster, every point).
double sweep_seconds(const Scenario& base, const std::vector<cli::SweepPoint>& points, int threads, bool fold,
                     std::size_t& ok) {
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    cli::HardwareCache cache(catalog);
    cli::SweepRunOptions options;
    options.threads = threads;
    options.fold = fold;
    const auto t = Clock::now();
    const auto outcomes = cli::run_points(base, base.sweep, points, cli::builtin_name_resolvers(), cache, options);
    const double s = since(t);
    ok = static_cast<std::size_t>(std::count_if(outcomes.begin(), outcomes.end(), [](const auto& o) {
        return o.status == cli::PointStatus::Ok || o.status == cli::PointStatus::OutOfMemory;
    }));
    return s;
}

// One point's phases, in strategies/run.cpp's order, then the whole of run_scenario and
// result_json in a second run of the same point. The two runs differ by the machine's noise, so
// no "rest" is derived from their difference (it would be noise as often as cost).
void profile_point(const Scenario& s, const hw::Hardware& hardware, bool fold,
                   std::vector<std::vector<double>>& phases) {
    auto t = Clock::now();
    const Layout layout = validate_plan(s);
    const auto checkpointed = checkpointed_layers(s, layout, BuildOptions{hardware.gpu().memory_capacity});
    const sim::Program program = build_program_checkpointing(s, layout, checkpointed);
    const double build = since(t);
    t = Clock::now();
    const sim::ProgramCosts costs = hardware.price(program);
    const double price = since(t);
    t = Clock::now();
    const auto planner = hardware.make_planner(program);
    const double plan = since(t);
    t = Clock::now();
    sim::SimOptions sim_options;
    sim_options.fold = fold;
    if (fold) sim_options.fold_generators = symmetry_generators(layout, s.parallel.tensor_mode);
    const sim::SimResult result = sim::simulate(program, costs, hardware.links(), *planner, {}, sim_options);
    const double simulate = since(t);
    RunOptions options;
    options.hardware = std::shared_ptr<const hw::Hardware>(&hardware, [](const hw::Hardware*) {});
    options.fold = fold;
    t = Clock::now();
    const RunResult r = run_scenario(s, options);
    (void)cli::result_json(s, r);
    const double whole = since(t);
    const double values[] = {build, price, plan, simulate, whole};
    for (std::size_t k = 0; k < phases.size(); ++k) phases[k].push_back(values[k]);
    (void)result;
}

}  // namespace

static int bench_main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const auto names = cli::builtin_name_resolvers();
    const Scenario base = cli::load_scenario_file(o.scenario, names);
    const auto points = cli::sweep_points(base.sweep);
    fmt::print("# cuboid-bench-sweep: {} ({} points); medians of {} runs; wall seconds\n", o.scenario, points.size(),
               o.repeat);
    fmt::print("{:>8} {:>10} {:>12} {:>14} {:>16}\n", "threads", "points", "sweep_s", "points/s", "points/min");
    for (const int threads : o.threads) {
        std::vector<double> runs;
        std::size_t ok = 0;
        for (int k = 0; k < o.repeat; ++k) runs.push_back(sweep_seconds(base, points, threads, o.fold, ok));
        const double s = median(runs);
        fmt::print("{:>8} {:>10} {:>12.2f} {:>14.3f} {:>16.1f}   (runs: {:.2f})\n", threads, points.size(), s,
                   points.size() / s, 60.0 * points.size() / s, fmt::join(runs, ", "));
    }
    if (o.profile_points == 0) return 0;
    // Phases of the first points on one thread (hardware built once before, as the cache does).
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    auto t = Clock::now();
    const auto hardware = hw::Hardware::build(base.cluster, catalog);
    const double hardware_s = since(t);
    std::vector<std::vector<double>> phases(5);
    for (std::size_t i = 0; i < std::min(o.profile_points, points.size()); ++i) {
        const Scenario s = cli::point_scenario(base, base.sweep, points[i], names);
        profile_point(s, *hardware, o.fold, phases);
    }
    fmt::print("\n# one point's phases (median over the first {} points, one thread); hardware model once per "
               "cluster: {:.3f} s\n", phases[0].size(), hardware_s);
    const char* labels[] = {"build program", "price ops", "transfer planner", "simulate",
                            "run_scenario + json (own run)"};
    for (std::size_t k = 0; k < phases.size(); ++k) fmt::print("{:>30} {:>10.4f} s\n", labels[k], median(phases[k]));
    return 0;
}

constexpr const char* kUsage =
    "usage: cuboid-bench-sweep [SCENARIO.yaml] [--repeat N] [--threads 1,2] [--profile-points N] [--no-fold]\n"
    "  --no-fold: simulate every rank (default: symmetry-folded, as cuboid sweep)\n";

int main(int argc, char** argv) {
    cuboid::cli::restart_with_huge_pages(argv);
    cuboid::cli::keep_freed_memory_for_reuse();  // as cuboid itself: the rate is that of cuboid sweep
    try {
        if (parse(argc, argv).help) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        return bench_main(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuboid-bench-sweep: %s\n%s", e.what(), kUsage);
        return 2;
    }
}
