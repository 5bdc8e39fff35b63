// simulate(): one Engine per call, so simulations never share state.
#include "sim/executor.hpp"

#include "sim/engine.hpp"

namespace cuboid::sim {

SimResult simulate(const Program& program, const ProgramCosts& costs, std::span<const Link> links,
                   TransferPlanner& planner, std::span<SimObserver* const> observers, const SimOptions& options) {
    Engine engine(program, costs, links, planner, observers, options);
    return engine.run();
}

}  // namespace cuboid::sim
