// The optimizer step on the host (training.optimizer_offload) against closed forms: the state it
// takes off the GPU, the bytes of its three ops (gradient shard out, Adam over host memory, 16-bit
// weights back), their durations from the host link's measured copy rates and the host memory
// bandwidth, and the checks at their keys.
#include <catch2/catch.hpp>

#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/model_math.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr double kHostMemory = 614.4;  // GB/s of a DGX H100's two Xeon 8480C (16 x DDR5-4800)

// The tiny model on 4 H100s of one node, data parallel with the distributed optimizer.
Scenario offload_plan(bool offload) {
    Scenario sc = test::tiny_scenario(1, 1, 4, 4, 4);
    sc.cluster.gpu = "h100-sxm-80gb";
    sc.cluster.host_memory_gb_per_s = kHostMemory;
    sc.parallel.zero_stage = 1;
    sc.training.optimizer_offload = offload;
    return sc;
}

struct OffloadOps {
    const sim::Op *out = nullptr, *adam = nullptr, *back = nullptr;
    int gpu_adam = 0;
};

OffloadOps find_ops(const sim::Program& p) {
    OffloadOps o;
    for (const sim::Op& op : p.op_lists[0].ops) {
        if (op.kind == sim::OpKind::DeviceToHost) o.out = &op;
        if (op.kind == sim::OpKind::HostOptimizer) o.adam = &op;
        if (op.kind == sim::OpKind::HostToDevice) o.back = &op;
        if (op.kind == sim::OpKind::Optimizer) ++o.gpu_adam;
    }
    return o;
}


}  // namespace

TEST_CASE("optimizer offload: the main weights and moments leave the GPU") {
    const Scenario on = offload_plan(true), off = offload_plan(false);
    const Layout l = validate_plan(on);
    const double params = stage_parameters_per_rank(on.model, l, 0);
    // bf16: fp32 main weights and Adam's two moments, 12 bytes a parameter, sharded over 4 replicas.
    CHECK(stage_resident_bytes(off, l, 0).value - stage_resident_bytes(on, l, 0).value ==
          Approx(12.0 * params / 4).epsilon(1e-12));
    CHECK(state_bytes_per_param(on.training).optimizer == 0.0);
    CHECK(run_scenario(on).peak_memory_bytes < run_scenario(off).peak_memory_bytes);
}

TEST_CASE("optimizer offload: the step's three ops move the shard's bytes, priced on the host") {
    const Scenario sc = offload_plan(true);
    const Layout l = validate_plan(sc);
    const sim::Program p = build_program(sc, l);
    const OffloadOps o = find_ops(p);
    REQUIRE((o.out && o.adam && o.back));
    CHECK(o.gpu_adam == 0);
    const double shard = stage_parameters_per_rank(sc.model, l, 0) / 4;
    CHECK(o.out->bytes.value == Approx(4.0 * shard).epsilon(1e-12));    // fp32 gradients
    CHECK(o.adam->bytes.value == Approx(30.0 * shard).epsilon(1e-12));  // Adam's traffic, as on the GPU
    CHECK(o.back->bytes.value == Approx(2.0 * shard).epsilon(1e-12));   // bf16 weights
    // Durations: the GPU's PCIe Gen5 x16 (63 GB/s) at the copy rates measured on an H100
    // (55.2 and 51.0 GB/s), the node's host memory shared by its 4 GPUs; plus the launch.
    const auto hw = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    const hw::ComputeModel& m = hw->compute_model();
    const double launch = to_seconds(m.duration(*o.out)) - o.out->bytes.value / 55.1998e9;
    CHECK(launch == Approx(2.0e-6).margin(1e-9));
    CHECK(to_seconds(m.duration(*o.back)) == Approx(launch + o.back->bytes.value / 50.9736e9).epsilon(1e-6));
    CHECK(to_seconds(m.duration(*o.adam)) == Approx(launch + o.adam->bytes.value / (kHostMemory * 1e9 / 4)).epsilon(1e-6));
    // It takes longer than the GPU's own step.
    CHECK(run_scenario(sc).iteration_time_s > run_scenario(offload_plan(false)).iteration_time_s);
}

TEST_CASE("optimizer offload: checked at its keys") {
    const Scenario on = offload_plan(true);
    CHECK(test::rejected_key(on, [](Scenario&) {}).empty());
    CHECK(test::rejected_key(on, [](Scenario& s) { s.parallel.zero_stage = 0; }) == "training.optimizer_offload");
    CHECK(test::rejected_key(on, [](Scenario& s) { s.cluster.host_memory_gb_per_s.reset(); }) ==
          "cluster.host_memory_gb_per_s");
    CHECK(test::rejected_key(offload_plan(false), [](Scenario&) {}).empty());
}
