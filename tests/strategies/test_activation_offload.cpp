// Activation offloading (training.activation_offload_layers) against closed forms: each offloaded
// layer copies exactly what its forward kept out and back once per micro-batch, on the offload
// and reload streams; the peak drops by those layers' activations; the copies run at the GPU's
// host copy rates (GB200's measured NVLink-C2C rates, else the host link's measured fractions);
// time the compute stream waits for them is charged to offload_exposed; the checks at the key.
#include <catch2/catch.hpp>

#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/run.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr int kLayers = 8;
constexpr int kMicro = 4;

// The tiny GPT, 8 layers, on 2 H100s of one node, data parallel, 4 micro-batches, no recomputation.
Scenario offloading(int layers_offloaded) {
    Scenario sc = test::tiny_scenario(1, 1, 2, kMicro, kLayers);
    sc.cluster.gpu = "h100-sxm-80gb";
    sc.training.activation_offload_layers = layers_offloaded;
    return sc;
}

struct Copies {
    int out = 0, back = 0;
    double out_bytes = 0.0, back_bytes = 0.0, first_out = 0.0;
    bool own_streams = true;
};

Copies copies(const sim::Program& p) {
    Copies c;
    for (const sim::Op& op : p.op_lists[0].ops) {
        const std::string& label = p.labels[op.label];
        if (label == "F.offload.activations") {
            if (c.out++ == 0) c.first_out = op.bytes.value;
            c.out_bytes += op.bytes.value;
            c.own_streams = c.own_streams && op.stream == stream::kOffload && op.memory_free.value == op.bytes.value;
        }
        if (label == "B.reload.activations") {
            ++c.back;
            c.back_bytes += op.bytes.value;
            c.own_streams = c.own_streams && op.stream == stream::kReload && op.memory_alloc.value == op.bytes.value;
        }
    }
    return c;
}

}  // namespace

TEST_CASE("activation offloading: each offloaded layer's kept activations go out and come back once per micro-batch") {
    for (int n : {1, 3, kLayers - 1}) {
        const Scenario sc = offloading(n);
        const Layout l = validate_plan(sc);
        const sim::Program p = build_program(sc, l);
        const Copies c = copies(p);
        INFO(n << " layers offloaded");
        test::check_allocations_released(p);  // what the reloads allocate, the backward releases
        CHECK(c.out == n * kMicro);
        CHECK(c.back == n * kMicro);
        CHECK(c.own_streams);
        CHECK(c.out_bytes == Approx(c.back_bytes).epsilon(1e-12));
        CHECK(c.out_bytes == Approx(n * kMicro * c.first_out).epsilon(1e-12));  // every layer alike
    }
    // What a layer keeps: Korthikanti et al.'s activations of a GPT layer without recomputation,
    // s*b*h*(34 + 5*a*s/h) bytes (16-bit activations, 1-byte dropout masks, unfused attention).
    Scenario gpt = offloading(2);
    gpt.model.attention = AttentionKernel::Unfused;
    gpt.model.attention_dropout = true;
    const double s = gpt.model.seq_len, b = 1, h = gpt.model.hidden, a = gpt.model.heads;
    CHECK(copies(build_program(gpt, validate_plan(gpt))).first_out == Approx(s * b * h * (34.0 + 5.0 * a * s / h)));
    // Without offloading there are no copies.
    const Copies none = copies(build_program(offloading(0), validate_plan(offloading(0))));
    CHECK(none.out + none.back == 0);
}

TEST_CASE("activation offloading: the peak drops by the offloaded layers' activations") {
    const Scenario sc = offloading(5);
    const Copies c = copies(build_program(sc, validate_plan(sc)));
    const double kept_per_layer = c.first_out;
    // The peak is at the end of a micro-batch's forward, when every kept layer holds its activations.
    CHECK(run_scenario(offloading(0)).peak_memory_bytes - run_scenario(sc).peak_memory_bytes ==
          Approx(5.0 * kept_per_layer).epsilon(1e-9));
}

TEST_CASE("activation offloading: copies at the host copy rates, their wait charged to offload_exposed") {
    // GB200: the measured NVLink-C2C copy rates of the catalog; H100: PCIe Gen5 at the measured fractions.
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    sim::Op out;
    out.kind = sim::OpKind::DeviceToHost;
    out.bytes = Bytes(1e9);
    sim::Op back = out;
    back.kind = sim::OpKind::HostToDevice;
    const hw::GpuSpec& gb200 = catalog.gpu("gb200");
    CHECK(gb200.host_copy_d2h.value == Approx(193e9));
    CHECK(gb200.host_copy_h2d.value == Approx(201e9));
    const hw::ComputeModel c2c(gb200, nullptr, BytesPerSecond(0.0));
    const hw::ComputeModel pcie(catalog.gpu("h100-sxm-80gb"), nullptr, BytesPerSecond(0.0));
    const double launch = 2e-6;
    CHECK(to_seconds(c2c.duration(out)) == Approx(launch + 1e9 / 193e9).epsilon(1e-6));
    CHECK(to_seconds(c2c.duration(back)) == Approx(launch + 1e9 / 201e9).epsilon(1e-6));
    CHECK(to_seconds(pcie.duration(out)) == Approx(launch + 1e9 / 55.1998e9).epsilon(1e-6));
    CHECK(to_seconds(pcie.duration(back)) == Approx(launch + 1e9 / 50.9736e9).epsilon(1e-6));

    // On an A100's PCIe Gen4 a wide bf16 layer's copies outlast its compute: the backward waits,
    // and the wait is offload_exposed; the parts still add up to the iteration.
    Scenario slow = offloading(kLayers - 1);
    slow.cluster.gpu = "a100-sxm-80gb";
    slow.training.precision = sim::Precision::Bf16;
    slow.model.hidden = 1024;
    slow.model.heads = 8;
    slow.model.seq_len = 1024;
    Scenario plain = slow;
    plain.training.activation_offload_layers = 0;
    const RunResult r = run_scenario(slow), base = run_scenario(plain);
    CHECK(r.breakdown.offload_exposed_s > 0.0);
    CHECK(base.breakdown.offload_exposed_s == 0.0);
    CHECK(r.iteration_time_s > base.iteration_time_s);
    const Breakdown& parts = r.breakdown;
    CHECK(parts.compute_s + parts.recompute_s + parts.exposed_comm_s() + parts.bubble_s ==
          Approx(r.iteration_time_s).epsilon(1e-6));
    // The folded simulation agrees with the full one.
    RunOptions folded;
    folded.fold = true;
    const RunResult f = run_scenario(slow, folded);
    CHECK(f.iteration_time_s == r.iteration_time_s);
    CHECK(f.fingerprint == r.fingerprint);
}

TEST_CASE("activation offloading: checked at its key") {
    const Scenario on = offloading(3);
    const std::string key = "training.activation_offload_layers";
    CHECK(test::rejected_key(on, [](Scenario&) {}).empty());
    CHECK(test::rejected_key(on, [](Scenario& s) { s.training.activation_offload_layers = kLayers; }) == key);
    CHECK(test::rejected_key(on, [](Scenario& s) {
              s.parallel.pipeline = 2;
              s.parallel.data = 1;
          }) == key);
    CHECK(test::rejected_key(on, [](Scenario& s) { s.parallel.recompute = Recompute::Full; }) == key);
    CHECK(test::rejected_key(on, [](Scenario& s) { s.parallel.schedule = Schedule::ZeroBubbleH1; }) == key);
}
