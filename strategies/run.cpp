#include "strategies/run.hpp"

#include <chrono>
#include <optional>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"
#include "strategies/host_dispatch.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_symmetry.hpp"
#include "sim/time_overflow.hpp"
#include "sim/trace_writer.hpp"
#include "strategies/run_figures.hpp"

namespace cuboid {

namespace {

RunResult simulate_scenario(const Scenario& sc, const RunOptions& options) {
    // The built-in catalog, parsed at most once: the partitioner reads it, and without a given
    // hardware model the model is built from it.
    std::optional<hw::Catalog> loaded;
    if (!options.builtin_catalog && !options.hardware) loaded.emplace(hw::Catalog::load_builtin());
    const hw::Catalog* builtin = options.builtin_catalog ? options.builtin_catalog : loaded ? &*loaded : nullptr;
    const Layout layout = builtin ? validate_plan(sc, *builtin) : validate_plan(sc);
    std::shared_ptr<const hw::Hardware> hardware =
        options.hardware ? options.hardware : hw::Hardware::build(sc.cluster, *builtin);
    check_gpu_features(sc, hardware->gpu());
    const std::vector<int> checkpointed =
        checkpointed_layers(sc, layout, BuildOptions{usable_memory(hardware->gpu(), options.memory_headroom)});
    options.cancel.throw_if_requested();
    const sim::Program program = with_host_dispatch(
        build_program_checkpointing(sc, layout, checkpointed, options.build_threads), *hardware,
        pipeline_chunks(sc.parallel));
    options.cancel.throw_if_requested();
    const sim::ProgramCosts costs = hardware->price(program);
    const auto planner = hardware->make_planner(program);

    // The trace writer needs the program, which only exists here: attach it beside the caller's
    // observers.
    std::optional<sim::TraceWriter> trace;
    std::vector<sim::SimObserver*> observers(options.observers.begin(), options.observers.end());
    if (options.trace) observers.push_back(&trace.emplace(program, *options.trace));

    const auto start = std::chrono::steady_clock::now();
    sim::SimOptions sim_options;
    sim_options.fold = options.fold;
    sim_options.cancel = options.cancel;
    sim_options.progress = options.progress;
    sim_options.progress = options.progress;
    if (options.fold) sim_options.fold_generators = symmetry_generators(layout, sc.parallel.tensor_mode);
    const sim::SimResult sim = sim::simulate(program, costs, hardware->links(), *planner, observers, sim_options);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
    if (trace) trace->finish();

    RunResult r;
    r.scenario = sc.name;
    r.gpus = layout.gpus();
    r.chunk_layers = layout.chunk_layers;
    r.tensor_mesh = layout.tensor_mesh;
    r.iteration_time_s = to_seconds(sim.makespan);
    // Each op list's GEMM FLOPs and memory peak, read off its ops by the simulation's indexing.
    r.hardware_flops_per_iteration = program_gemm_flops(program, sim.op_list_totals);
    fill_rates(r, sc, hardware->gpu());
    fill_memory(r, sim.op_list_totals, hardware->gpu(), options.memory_headroom);
    r.stage_memory = stage_memory_breakdown(sc, layout, program, sim.op_list_totals);
    r.critical_rank = critical_rank(sim);
    const RankGrid grid = layout.grid();
    for (std::size_t a = 0; a < grid.axes().size(); ++a)
        r.critical_rank_coords.push_back({grid.axes()[a].name, grid.coord(r.critical_rank, a)});
    if (!sim.ranks.empty()) r.breakdown = breakdown_seconds(sim.ranks[r.critical_rank].breakdown);
    r.stage_busy_s = stage_busy_seconds(program, sim);
    if (!sim.ranks.empty())
        r.bubble_split = split_bubble(r.breakdown.bubble_s, busy_seconds(sim.ranks[r.critical_rank].breakdown),
                                      r.stage_busy_s);
    for (int s = 0; s < layout.pipeline; ++s)
        r.stage_recompute_fraction.push_back(static_cast<double>(checkpointed[static_cast<std::size_t>(s)]) /
                                             layout.layers_on_stage(s));
    r.sim_events = sim.events;
    r.sim_wall_s = wall.count();
    r.fingerprint = sim.fingerprint;
    r.sim_fold_factor = sim.fold_factor;
    return r;
}

}  // namespace

RunResult run_scenario(const Scenario& sc, const RunOptions& options) {
    try {
        return simulate_scenario(sc, options);
    } catch (const TimeOverflow& e) {
        // Each input is in its range, but together they give a time no clock holds: an input error.
        throw InputError({sc.source_file, 0, ""}, e.what());
    }
}

}  // namespace cuboid
