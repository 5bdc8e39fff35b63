// simulate(): one Engine per call, so simulations never share state.
#include "sim/executor.hpp"

#include "sim/engine.hpp"
#include "sim/fold.hpp"

namespace cuboid::sim {

SimResult simulate(const Program& program, const ProgramCosts& costs, std::span<const Link> links,
                   TransferPlanner& planner, std::span<SimObserver* const> observers, const SimOptions& options) {
    // Observers want every rank's events, which a folded run does not produce.
    if (options.fold && observers.empty() && !options.fold_generators.empty()) {
        if (auto folded = simulate_folded(program, costs, links, planner, options)) return *std::move(folded);
    }
    Engine engine(EngineInput::whole(program), costs, links, planner, observers, options);
    return engine.run();
}

}  // namespace cuboid::sim
