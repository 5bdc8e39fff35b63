// cuboid-bench-sim: wall time of one simulated iteration per cluster size, split into program
// building, pricing and event simulation, for the rows of a scenario table.
//
// The points are the scenario files next to the given one (default: the Megatron-LM SC'21
// Table 1 rows, one model and plan per GPU count, as the paper scaled them); --gpus picks which.
// Each point runs once to warm up, then --repeat times; the medians are printed. --no-lockstep
// turns lockstep runs off (sim/engine_lockstep.cpp): every tensor collective and compute chain
// is then an event of its own, with the same results.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_main.hpp"
#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "sim/executor.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string scenario = "scenarios/megatron_sc21/gpt-1008b.yaml";
    std::vector<int> gpus{64, 128, 256, 512, 1024, 1536, 1920, 2520, 3072};
    int repeat = 3;
    bool lockstep = true;  // --no-lockstep: every collective and chain as events of its own
};

struct Sample {
    double build_s = 0.0;     // plan check, recomputation choice, program
    double price_s = 0.0;     // compute durations and the transfer planner
    double simulate_s = 0.0;  // sim::simulate
    std::uint64_t events = 0;
    std::uint64_t fingerprint = 0;
    double total() const { return build_s + price_s + simulate_s; }
};

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One iteration of `sc` as strategies/run.cpp does it, with each piece timed.
Sample run_once(const cuboid::Scenario& sc, const cuboid::hw::Hardware& hardware, bool lockstep) {
    Sample s;
    auto t = Clock::now();
    const cuboid::Layout layout = cuboid::validate_plan(sc);
    const auto checkpointed =
        cuboid::checkpointed_layers(sc, layout, cuboid::BuildOptions{hardware.gpu().memory_capacity});
    const cuboid::sim::Program program = cuboid::build_program_checkpointing(sc, layout, checkpointed);
    s.build_s = seconds_since(t);
    t = Clock::now();
    const cuboid::sim::ProgramCosts costs = hardware.price(program);
    const auto planner = hardware.make_planner(program);
    s.price_s = seconds_since(t);
    t = Clock::now();
    cuboid::sim::SimOptions options;
    options.lockstep_runs = lockstep;
    const cuboid::sim::SimResult result = cuboid::sim::simulate(program, costs, hardware.links(), *planner, {}, options);
    s.simulate_s = seconds_since(t);
    s.events = result.events;
    s.fingerprint = result.fingerprint;
    return s;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int> parse_list(const std::string& text) {
    std::vector<int> out;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t comma = std::min(text.find(',', pos), text.size());
        out.push_back(std::stoi(text.substr(pos, comma - pos)));
        pos = comma + 1;
    }
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--gpus" && has_value) o.gpus = parse_list(argv[++i]);
        else if (a == "--repeat" && has_value) o.repeat = std::max(1, std::stoi(argv[++i]));
        else if (a == "--no-lockstep") o.lockstep = false;
        else if (a == "--help" || a == "-h") throw std::invalid_argument("");
        else if (a.rfind("--", 0) != 0) o.scenario = a;
        else throw std::invalid_argument("unknown option '" + a + "'");
    }
    return o;
}

// The scenario files beside `path`, by GPU count (the first file in name order for a count).
std::map<int, cuboid::Scenario> rows_beside(const std::string& path, const cuboid::cli::NameResolvers& names) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
        if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    std::map<int, cuboid::Scenario> rows;
    for (const auto& f : files) {
        cuboid::Scenario sc = cuboid::cli::load_scenario_file(f.string(), names);
        rows.emplace(sc.cluster.gpus(), std::move(sc));
    }
    return rows;
}

void bench_point(int gpus, const cuboid::Scenario& sc, int repeat, bool lockstep) {
    const auto hardware = cuboid::hw::Hardware::build(sc.cluster, cuboid::hw::Catalog::load_builtin());
    const Sample warm = run_once(sc, *hardware, lockstep);
    std::vector<double> build, price, simulate, total;
    for (int r = 0; r < repeat; ++r) {
        const Sample s = run_once(sc, *hardware, lockstep);
        if (s.fingerprint != warm.fingerprint) throw std::runtime_error("fingerprint differs between runs");
        build.push_back(s.build_s);
        price.push_back(s.price_s);
        simulate.push_back(s.simulate_s);
        total.push_back(s.total());
    }
    const double sim_s = median(simulate);
    fmt::print("{:>6} {:>26} {:>11} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.3f}  0x{:016x}\n", gpus, sc.name,
               warm.events, median(build), median(price), sim_s, median(total),
               static_cast<double>(warm.events) / sim_s / 1e6, warm.fingerprint);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    return cuboid::bench::run_main(
        "cuboid-bench-sim [SCENARIO.yaml] [--gpus 64,128,...] [--repeat N] [--no-lockstep]", [&] {
            const Options o = parse(argc, argv);
            const auto names = cuboid::cli::builtin_name_resolvers();
            const auto rows = rows_beside(o.scenario, names);
            fmt::print("# cuboid-bench-sim: rows beside {}; medians of {} runs after 1 warm-up (seconds)\n", o.scenario,
                       o.repeat);
            fmt::print("{:>6} {:>26} {:>11} {:>9} {:>9} {:>9} {:>9} {:>10}  {}\n", "gpus", "scenario", "events", "build",
                       "price", "simulate", "total", "Mevents/s", "fingerprint");
            for (const int g : o.gpus) {
                const auto it = rows.find(g);
                if (it == rows.end()) {
                    fmt::print("{:>6} (no scenario with {} GPUs beside {})\n", g, g, o.scenario);
                    continue;
                }
                bench_point(g, it->second, o.repeat, o.lockstep);
            }
        });
}
