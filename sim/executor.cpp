// simulate(): one Engine per call, so simulations never share state.
#include "sim/executor.hpp"

#include <optional>

#include "sim/engine.hpp"
#include "sim/fold.hpp"

namespace cuboid::sim {

SimResult simulate(const Program& program, const ProgramCosts& costs, std::span<const Link> links,
                   TransferPlanner& planner, std::span<SimObserver* const> observers, const SimOptions& options) {
    // Indexed once, for the folding checks, the exclusive-transfer analysis and the engine, and
    // not again when a fold fails and the full run follows.
    const std::vector<OpListIndex> indexes = index_op_lists(program, costs, options.merge_compute_chains);
    std::optional<SimResult> result;
    // Observers want every rank's events, which a folded run does not produce.
    if (options.fold && observers.empty() && !options.fold_generators.empty()) {
        result = simulate_folded(program, indexes, links, planner, options);
    }
    if (!result) {
        Engine engine(EngineInput::whole(program, indexes), links, planner, observers, options);
        result = engine.run();
    }
    for (const OpListIndex& index : indexes) result->op_list_totals.push_back(index.totals);
    return *std::move(result);
}

}  // namespace cuboid::sim
