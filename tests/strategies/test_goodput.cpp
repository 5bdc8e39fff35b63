// Goodput under failures (strategies/goodput.*): Daly's interval and expected wall time against
// their closed forms and limits.
#include <catch2/catch.hpp>

#include <cmath>

#include "strategies/goodput.hpp"
#include "strategies/model_math.hpp"
#include "strategies/training_state.hpp"

using namespace cuboid;

TEST_CASE("Daly's interval is Young's sqrt(2 delta M) to first order and minimises the expected wall time") {
    const double delta = 30.0, mtbf = 3.0 * 3600.0;
    const double tau = daly_interval(delta, mtbf);
    CHECK(tau == Approx(std::sqrt(2.0 * delta * mtbf)).epsilon(0.03));
    const double useful = 30.0 * 86400.0;
    const double best = expected_wall_time(useful, tau, delta, 60.0, mtbf);
    for (double f : {0.5, 0.8, 0.95, 1.05, 1.25, 2.0}) CHECK(expected_wall_time(useful, f * tau, delta, 60.0, mtbf) > best);
    CHECK(daly_interval(3.0 * mtbf, mtbf) == mtbf);  // beyond delta < 2M: checkpoint once per MTBF
}

TEST_CASE("expected wall time: no loss as failures vanish, and each loss term adds as the first-order model says") {
    const double useful = 1e6, tau = 1000.0, delta = 10.0, restart = 100.0;
    // M -> infinity: the wall time tends to useful * (tau + delta) / tau (checkpoint writes only).
    CHECK(expected_wall_time(useful, tau, delta, restart, 1e15) == Approx(useful * (tau + delta) / tau).epsilon(1e-6));
    // First order in 1/M: wall ~ useful (1 + delta/tau) (1 + R/M + (tau + delta)/(2M)).
    const double mtbf = 1e7;
    const double first = useful * (tau + delta) / tau * (1.0 + restart / mtbf + (tau + delta) / (2.0 * mtbf));
    CHECK(expected_wall_time(useful, tau, delta, restart, mtbf) == Approx(first).epsilon(1e-6));
}

TEST_CASE("goodput of a job: MTBF from the per-GPU rate, effective time = ideal / goodput, defaults from Llama 3") {
    ReliabilitySpec spec;
    const double ideal = 20.0 * 86400.0, bytes = 1e12;
    const Goodput g = goodput_of(spec, ideal, 16384, bytes);
    CHECK(g.failures_per_gpu_day == Approx(419.0 / (16384.0 * 54.0)));
    CHECK(g.mtbf_s == Approx(54.0 * 86400.0 / 419.0));  // Llama 3's own job: one unexpected interruption per 3.1 h
    CHECK(g.checkpoint_write_s == Approx(bytes / 2000e9));
    CHECK(g.restart_s == Approx(g.checkpoint_write_s));
    CHECK(g.interval_optimal);
    CHECK(g.goodput < 1.0);
    REQUIRE(g.effective_time_to_train_s);
    CHECK(*g.effective_time_to_train_s == Approx(ideal / g.goodput));
    // Twice the GPUs: half the MTBF and a lower goodput; a restart overhead lowers it further.
    const Goodput twice = goodput_of(spec, ideal, 32768, bytes);
    CHECK(twice.mtbf_s == Approx(g.mtbf_s / 2.0));
    CHECK(twice.goodput < g.goodput);
    spec.restart_overhead_s = 600.0;
    CHECK(goodput_of(spec, ideal, 16384, bytes).goodput < g.goodput);
    // Nothing fails: no loss at all.
    spec.failures_per_gpu_day = 0.0;
    const Goodput none = goodput_of(spec, ideal, 16384, bytes);
    CHECK(none.goodput == 1.0);
    CHECK(*none.effective_time_to_train_s == ideal);
    // Failures far faster than a checkpoint: the job never finishes.
    spec.failures_per_gpu_day = 1.0;
    spec.checkpoint_interval_s = 1e7;
    const Goodput never = goodput_of(spec, ideal, 100000, bytes);
    CHECK(never.goodput == 0.0);
    CHECK_FALSE(never.effective_time_to_train_s);
}

TEST_CASE("a checkpoint holds weights and Adam's state, no gradients") {
    ModelSpec m;
    m.layers = 2;
    m.hidden = 256;
    m.heads = 4;
    m.seq_len = 128;
    m.vocab = 1000;
    CHECK(checkpoint_bytes(m, sim::Precision::Bf16) == Approx(parameter_count(m) * (2.0 + 12.0)));
    CHECK(checkpoint_bytes(m, sim::Precision::Fp32) == Approx(parameter_count(m) * (4.0 + 8.0)));
}
