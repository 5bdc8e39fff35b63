// run_scenario end to end on the built-in hardware catalog: the contract's figures agree with
// each other.
#include <catch2/catch.hpp>

#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/layout.hpp"
#include "strategies/model_math.hpp"
#include "strategies/model_presets.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

TEST_CASE("run_scenario: throughput, FLOPs, MFU, breakdown and extras are consistent") {
    Scenario sc = cuboid::test::tiny_scenario(2, 2, 2, 8, 8);
    sc.model.hidden = 1024;
    sc.model.heads = 16;
    sc.model.seq_len = 512;
    sc.model.vocab = 32000;
    sc.parallel.recompute = Recompute::Full;
    sc.training.tokens = 1e9;
    sc.cost.gpu_hour_usd = 2.0;
    sc.cost.node_power_kw = 6.5;
    const auto hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    const RunResult r = run_scenario(sc, RunOptions{.hardware = hardware});

    REQUIRE(r.iteration_time_s > 0.0);
    CHECK(r.gpus == 8);
    const double tokens = static_cast<double>(sc.training.global_batch) * sc.model.seq_len;
    CHECK(r.tokens_per_s == Approx(tokens / r.iteration_time_s));
    CHECK(r.model_flops_per_iteration == Approx(model_flops_per_iteration(sc.model, sc.training.global_batch)));
    // Full recompute adds one forward of every layer: hardware = model + recompute FLOPs.
    CHECK(r.hardware_flops_per_iteration ==
          Approx(r.model_flops_per_iteration +
                 recompute_flops_per_iteration(sc.model, sc.training.global_batch, Recompute::Full)));
    const double peak = hardware->gpu().peak(sc.training.precision).value;
    CHECK(r.mfu == Approx(r.model_flops_per_iteration / r.iteration_time_s / r.gpus / peak));
    CHECK(r.mfu > 0.0);
    CHECK(r.mfu < 1.0);
    // The critical GPU's parts add up to the iteration (contract: within 1%).
    const Breakdown& b = r.breakdown;
    const double parts = b.compute_s + b.recompute_s + b.exposed_comm_s() + b.bubble_s;
    CHECK(parts == Approx(r.iteration_time_s).epsilon(0.01));
    CHECK(b.recompute_s > 0.0);
    // Memory: each stage peaks above its resident state; the tiny model fits.
    const Layout l = validate_plan(sc);
    REQUIRE(r.stage_peak_memory_bytes.size() == 2);
    for (int s = 0; s < 2; ++s) CHECK(r.stage_peak_memory_bytes[s] > stage_resident_bytes(sc, l, s).value);
    CHECK(r.fits_in_memory);
    CHECK(r.memory_capacity_bytes == hardware->gpu().memory_capacity.value);
    // Extras: hours = tokens / tokens_per_s / 3600; cost = GPUs x hours x price; energy = nodes x kW x hours.
    const double hours = *sc.training.tokens / r.tokens_per_s / 3600.0;
    REQUIRE(r.time_to_train_s);
    CHECK(*r.time_to_train_s == Approx(hours * 3600.0));
    CHECK(*r.cost_usd == Approx(8 * hours * 2.0));
    CHECK(*r.energy_kwh == Approx(1 * 6.5 * hours));
}

TEST_CASE("run_scenario: a model too large for the GPUs is reported as not fitting") {
    // GPT 39B on one node with t = 8: 39e9/8 parameters per GPU x 18 bytes (bf16 Adam) = 88 GB
    // of state alone, above the 80 GB of an A100 80 GB.
    Scenario sc;
    apply_preset("gpt-39b", sc.model);
    sc.training.global_batch = 1;
    sc.parallel.tensor = 8;
    sc.parallel.recompute = Recompute::Full;
    const RunResult r = run_scenario(sc);
    CHECK_FALSE(r.fits_in_memory);
    CHECK(r.peak_memory_bytes > r.memory_capacity_bytes);
}

TEST_CASE("run_scenario rejects an invalid plan before simulating") {
    Scenario sc = cuboid::test::tiny_scenario(2, 2, 2, 8);
    sc.parallel.data = 3;
    CHECK_THROWS_AS(run_scenario(sc), InputError);
}

TEST_CASE("tp_backward_overlap: a blocking input-gradient all-reduce costs at most its own time") {
    // Overlapped, each backward tensor-parallel all-reduce runs beside the weight-gradient GEMM;
    // blocking, it runs after it and the next kernel waits. So the blocking iteration is longer,
    // but by no more than the time of those all-reduces (they are the only work that moved).
    Scenario sc = cuboid::test::tiny_scenario(4, 1, 1, 4, 4);
    sc.model.hidden = 1024;
    sc.model.heads = 16;
    sc.model.seq_len = 512;
    const auto hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    const RunResult overlapped = run_scenario(sc, RunOptions{.hardware = hardware});
    sc.parallel.tp_backward_overlap = false;
    const RunResult blocking = run_scenario(sc, RunOptions{.hardware = hardware});

    const Layout layout = validate_plan(sc);
    const sim::Program program = build_program(sc, layout);
    // One backward all-reduce per column-parallel GEMM input (QKV, FC1) per layer and micro-batch,
    // plus the logits' input gradient per micro-batch.
    const int m = sc.training.global_batch / sc.training.micro_batch;
    const double per_allreduce = to_seconds(hardware->collective_time(
        sim::OpKind::AllReduce, Bytes(2.0 * sc.training.micro_batch * sc.model.seq_len * sc.model.hidden),
        program.groups[program.ranks[0].groups[0]].ranks));
    const double moved = (2.0 * sc.model.layers + 1.0) * m * per_allreduce;
    CHECK(blocking.iteration_time_s > overlapped.iteration_time_s);
    CHECK(blocking.iteration_time_s - overlapped.iteration_time_s <= moved * 1.001);
}

// One stage on one GPU: every kernel is on the critical path, so the TE passes add exactly their
// own durations, each at least its bytes at the full HBM rate and at most a launch plus its bytes
// at the smallest memory efficiency of the catalog curve.
TEST_CASE("Transformer Engine's fp8 passes add their bytes' worth of HBM time to an iteration") {
    Scenario on = cuboid::test::te_fp8_scenario(1, 4, 2);
    on.model.hidden = 1024;
    on.model.heads = 8;
    on.model.seq_len = 1024;
    on.cluster.gpu = "h100-sxm-80gb";
    Scenario off = on;
    off.model.transformer_engine = false;
    const auto hardware = hw::Hardware::build(on.cluster, hw::Catalog::load_builtin());
    const double added = run_scenario(on, RunOptions{.hardware = hardware}).iteration_time_s -
                         run_scenario(off, RunOptions{.hardware = hardware}).iteration_time_s;
    const sim::Program p = build_program(on, validate_plan(on));
    double bytes = 0.0;
    int kernels = 0;
    for (const sim::Op& op : p.op_lists[0].ops) {
        const std::string& l = p.labels[op.label];
        if (l.find(".cast") != std::string::npos || l.find(".transpose") != std::string::npos ||
            l.find("rope") != std::string::npos) {
            bytes += op.bytes.value;
            ++kernels;
        }
    }
    REQUIRE(kernels > 0);
    const hw::GpuSpec& gpu = hardware->gpu();
    const double hbm = gpu.memory_bandwidth.value;
    CHECK(added >= bytes / hbm);
    CHECK(added <= kernels * to_seconds(gpu.kernel_launch) + bytes / (hbm * gpu.memory_efficiency.at(1.0)));
}

TEST_CASE("run_scenario: the critical rank's coordinates on the plan's axes number it back") {
    Scenario sc = test::tiny_scenario(2, 3, 2, 4);  // t 2, p 3, d 2: 12 GPUs
    const RunResult r = run_scenario(sc);
    REQUIRE(r.critical_rank_coords.size() == 4);
    std::vector<std::string> names;
    for (const auto& c : r.critical_rank_coords) names.emplace_back(c.axis);
    CHECK(names == std::vector<std::string>{"tensor", "context", "data", "pipeline"});
    const int sizes[] = {2, 1, 2, 3};
    int rank = 0, stride = 1;
    for (std::size_t a = 0; a < 4; ++a) {
        CHECK(r.critical_rank_coords[a].coord >= 0);
        CHECK(r.critical_rank_coords[a].coord < sizes[a]);
        rank += r.critical_rank_coords[a].coord * stride;
        stride *= sizes[a];
    }
    CHECK(static_cast<std::uint32_t>(rank) == r.critical_rank);
}
