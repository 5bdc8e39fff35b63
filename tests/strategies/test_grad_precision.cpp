// training.grad_precision: bf16 gradients halve the gradient buffer, every gradient reduction's
// bytes and the optimizer's gradient read; unset keeps the precision's defaults bit for bit.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

double bytes_of(const sim::Program& p, const std::string& label) {
    double sum = 0.0;
    for (const sim::Op& op : p.op_lists[0].ops)
        if (p.labels[op.label] == label) sum += op.bytes.value;
    return sum;
}

Scenario with_grads(Scenario sc, std::optional<sim::Precision> grads) {
    sc.training.grad_precision = grads;
    return sc;
}

}  // namespace

TEST_CASE("grad_precision: 16 bytes of state per parameter instead of 18, Adam reads 2 bytes less") {
    TrainingSpec t;
    t.precision = sim::Precision::Bf16;
    CHECK(state_bytes_per_param(t).total() == 18.0);
    CHECK(optimizer_step_bytes_per_param(t) == 30.0);
    t.grad_precision = sim::Precision::Bf16;
    const StateBytesPerParam s = state_bytes_per_param(t);
    CHECK(s.weight == 2.0);
    CHECK(s.grad == 2.0);
    CHECK(s.optimizer == 12.0);
    CHECK(optimizer_step_bytes_per_param(t) == 28.0);
    // ZeRO-1 over 4 ranks: 2 + 2 + 12 / 4.
    CHECK(sharded_state_bytes_per_param(t, 1, 4).total() == 7.0);
    t.grad_precision = sim::Precision::Fp32;  // the default, stated
    CHECK(state_bytes_per_param(t).total() == 18.0);
}

TEST_CASE("grad_precision: every gradient reduction moves half the bytes") {
    Scenario zero0 = test::tiny_scenario(1, 1, 4, 4, 4);
    Scenario zero1 = zero0;
    zero1.parallel.zero_stage = 1;
    for (const Scenario& sc : {zero0, zero1}) {
        const Scenario half = with_grads(sc, sim::Precision::Bf16);
        const sim::Program a = build_program(sc, validate_plan(sc));
        const sim::Program b = build_program(half, validate_plan(half));
        const std::string label = sc.parallel.zero_stage == 0 ? "dp.allreduce" : "dp.reducescatter";
        INFO(label);
        REQUIRE(bytes_of(a, label) > 0.0);
        CHECK(bytes_of(b, label) == Approx(bytes_of(a, label) / 2));
        // The weights all-gathered after a ZeRO-1 step stay 16-bit.
        CHECK(bytes_of(b, "dp.allgather") == bytes_of(a, "dp.allgather"));
    }
}

TEST_CASE("grad_precision: unset or fp32 keeps the result; bf16 lowers the peak by 2 bytes per parameter") {
    const Scenario sc = test::tiny_scenario(1, 1, 4, 4, 4);
    const RunResult base = run_scenario(sc);
    const RunResult fp32 = run_scenario(with_grads(sc, sim::Precision::Fp32));
    CHECK(fp32.fingerprint == base.fingerprint);
    CHECK(fp32.peak_memory_bytes == base.peak_memory_bytes);
    const RunResult bf16 = run_scenario(with_grads(sc, sim::Precision::Bf16));
    CHECK(bf16.peak_memory_bytes < base.peak_memory_bytes);
    CHECK(bf16.iteration_time_s <= base.iteration_time_s);
}

TEST_CASE("grad_precision: only for bf16 and fp8 training") {
    Scenario fp16 = with_grads(test::tiny_scenario(1, 1, 2, 2), sim::Precision::Bf16);
    fp16.training.precision = sim::Precision::Fp16;
    try {
        validate_plan(fp16);
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(e.where().key == "training.grad_precision");
        CHECK_THAT(e.what(), Catch::Contains("bf16 or fp8 training"));
    }
    Scenario fp8 = with_grads(test::tiny_scenario(1, 1, 2, 2), sim::Precision::Bf16);
    fp8.training.precision = sim::Precision::Fp8;
    CHECK_NOTHROW(validate_plan(fp8));
}
