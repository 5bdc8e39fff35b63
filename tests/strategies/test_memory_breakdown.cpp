// The per-stage memory breakdown of a run: its parts sum to the stage peak that decides fit, and
// each part follows the plan the way its physics says (ZeRO shards the optimizer state,
// recomputation drops activations, only a pipeline holds message buffers).
#include <catch2/catch.hpp>

#include <algorithm>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/memory_breakdown.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// A small GPT on 4 GPUs (tensor 1) with pipeline `p` and data 4 / p.
Scenario small_plan(int p, int zero, Recompute recompute) {
    Scenario sc = cuboid::test::tiny_scenario(1, p, 4 / p, 4, 4);
    sc.model.hidden = 512;
    sc.model.heads = 8;
    sc.model.seq_len = 256;
    sc.model.vocab = 8192;
    sc.parallel.zero_stage = zero;
    sc.parallel.recompute = recompute;
    return sc;
}

RunResult run(const Scenario& sc) {
    static const hw::Catalog catalog = hw::Catalog::load_builtin();
    return run_scenario(sc, RunOptions{.hardware = hw::Hardware::build(sc.cluster, catalog)});
}

double sum_of_parts(const StageMemory& m) {
    const ResidentMemory& r = m.resident;
    return r.weights_bytes + r.gradients_bytes + r.optimizer_state_bytes + r.pipeline_buffers_bytes +
           m.activations_bytes;
}

}  // namespace

TEST_CASE("memory breakdown: the parts of every stage sum to its peak, the worst stage to the run's peak",
          "[memory]") {
    for (const int p : {1, 2})
        for (const int zero : {0, 1})
            for (const Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full}) {
                INFO("pipeline " << p << ", ZeRO " << zero << ", recompute " << to_string(rc));
                const Scenario sc = small_plan(p, zero, rc);
                const RunResult r = run(sc);
                REQUIRE(r.stage_memory.size() == static_cast<std::size_t>(p));
                for (std::size_t s = 0; s < r.stage_memory.size(); ++s) {
                    const StageMemory& m = r.stage_memory[s];
                    CHECK(m.peak_bytes == r.stage_peak_memory_bytes[s]);
                    CHECK(sum_of_parts(m) == Approx(m.peak_bytes).epsilon(1e-12));
                    CHECK(m.activations_bytes > 0.0);
                    // The resident parts are the ones the program holds all iteration.
                    const ResidentMemory& held = m.resident;
                    CHECK(held.weights_bytes + held.gradients_bytes + held.optimizer_state_bytes +
                              held.pipeline_buffers_bytes ==
                          Approx(stage_resident_bytes(sc, validate_plan(sc), static_cast<int>(s)).value)
                              .epsilon(1e-12));
                }
                CHECK(r.stage_memory[peak_stage(r.stage_memory)].peak_bytes == r.peak_memory_bytes);
            }
}

TEST_CASE("memory breakdown: each part follows its plan setting", "[memory]") {
    const RunResult zero0 = run(small_plan(1, 0, Recompute::None));
    const RunResult zero1 = run(small_plan(1, 1, Recompute::None));
    const RunResult full = run(small_plan(1, 0, Recompute::Full));
    const RunResult piped = run(small_plan(2, 0, Recompute::None));
    const ResidentMemory& a = zero0.stage_memory[0].resident;
    const ResidentMemory& b = zero1.stage_memory[0].resident;
    // bf16 mixed precision: 2 bytes of weight, 4 of gradient, 12 of optimizer state per parameter.
    const StateBytesPerParam bf16 = state_bytes_per_param(sim::Precision::Bf16);
    CHECK(a.gradients_bytes == Approx(a.weights_bytes * bf16.grad / bf16.weight));
    CHECK(a.optimizer_state_bytes == Approx(a.weights_bytes * bf16.optimizer / bf16.weight));
    // ZeRO 1 shards only the optimizer state, over the 4 data-parallel replicas.
    CHECK(b.weights_bytes == a.weights_bytes);
    CHECK(b.gradients_bytes == a.gradients_bytes);
    CHECK(b.optimizer_state_bytes == Approx(a.optimizer_state_bytes / 4.0));
    CHECK(zero1.stage_memory[0].activations_bytes == zero0.stage_memory[0].activations_bytes);
    // Full recomputation keeps only each layer's input: fewer activations, the same state.
    CHECK(full.stage_memory[0].activations_bytes < zero0.stage_memory[0].activations_bytes);
    CHECK(full.stage_memory[0].resident.optimizer_state_bytes == a.optimizer_state_bytes);
    // Only a pipeline holds incoming activation and gradient messages; its stages split the state.
    CHECK(a.pipeline_buffers_bytes == 0.0);
    for (const StageMemory& m : piped.stage_memory) {
        CHECK(m.resident.pipeline_buffers_bytes > 0.0);
        CHECK(m.resident.weights_bytes < a.weights_bytes);
    }
}
