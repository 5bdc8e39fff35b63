#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "calibrate/fit/profile_writer.hpp"
#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/profile.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::calibrate;

namespace {

constexpr double kLaunch = 4e-6;  // s per kernel, back to back

// A 2x2x2 bf16 grid, m, n, k in {2048, 8192}, with rate X = 300 + 100 i + 50 j + 25 l TFLOP/s
// (i, j, l = 1 for the larger m, n, k); each point is timed as the compute model would price it:
// t = launch + 2mnk / X.
double rate_tflops(std::int64_t m, std::int64_t n, std::int64_t k) {
    return 300.0 + (m > 2048 ? 100.0 : 0.0) + (n > 2048 ? 50.0 : 0.0) + (k > 2048 ? 25.0 : 0.0);
}

Measurements synthetic() {
    Measurements r;
    r.launch_seconds = kLaunch;
    for (std::int64_t m : {2048, 8192})
        for (std::int64_t n : {2048, 8192})
            for (std::int64_t k : {2048, 8192})
                r.gemm.push_back({"bf16", m, n, k, 1, kLaunch + 2.0 * m * n * k / (rate_tflops(m, n, k) * 1e12)});
    // layer norm at 1 MB: 500 GB/s, 1 GB: 2500 GB/s (t = launch + B / rate).
    r.memory.push_back({"layer-norm", 1e6, kLaunch + 1e6 / 500e9});
    r.memory.push_back({"layer-norm", 1e9, kLaunch + 1e9 / 2500e9});
    for (double b = 1024; b <= 1 << 30; b *= 2) r.collectives.push_back({"all-gather", 4, b, 15e-6 + 0.75 * b / 300e9});
    r.batched_gemm.push_back({"bf16", 2048, 2048, 128, 64, 1e-3});
    r.copies = {{"h2d", 1 << 20, 1e-5 + (1 << 20) / 25e9}, {"h2d", 1 << 30, 1e-5 + (1 << 30) / 25e9}};
    r.notes.push_back("fp8: skipped: compute capability 8.0 < 8.9");
    return r;
}

hw::HardwareProfile round_trip(const FittedProfile& f) {
    const auto path = cuboid::scratch::file("cuboid-calibrate-roundtrip.yaml").string();
    write_profile(f, path);
    hw::HardwareProfile p = hw::HardwareProfile::load(path);
    std::remove(path.c_str());
    return p;
}

sim::Op gemm_op(std::int64_t m, std::int64_t n, std::int64_t k) {
    sim::Op op;
    op.kind = sim::OpKind::Gemm;
    op.precision = sim::Precision::Bf16;
    op.shape = sim::PackedGemmShape::of({m, n, k, 1});
    op.flops = Flops(2.0 * m * n * k);
    return op;  // bytes 0: the math term alone decides
}

}  // namespace

TEST_CASE("profile round trip: the loader reads back what the writer wrote", "[calibrate]") {
    const std::map<std::string, std::string> meta = {
        {"gpu", "h100-sxm-80gb"}, {"command", "cuboid-calibrate --out \"a: b.yaml\""}, {"date", "2026-03-01"}};
    const FittedProfile f = fit_profile(synthetic(), meta);
    const hw::HardwareProfile p = round_trip(f);
    CHECK(p.metadata == meta);  // quoted strings survive colons and quotes
    REQUIRE(p.kernel_launch);
    CHECK(to_seconds(*p.kernel_launch) == Approx(kLaunch));
    REQUIRE(p.gemm.size() == 8);
    for (const auto& g : p.gemm) CHECK(g.tflops == Approx(rate_tflops(g.m, g.n, g.k)).epsilon(1e-5));
    REQUIRE(p.collectives.size() == 1);
    CHECK(p.collective(sim::OpKind::AllGather, 4, 1, "ring") != nullptr);  // "auto" applies to any
    // Measured inside one node: it must not price a group of 4 spread over 2 nodes (its links
    // are the NICs, not NVLink), which keeps the topology model.
    CHECK(p.collectives[0].nodes == 1);
    CHECK(p.collective(sim::OpKind::AllGather, 4, 2, "ring") == nullptr);
    CHECK(p.collectives[0].bus_gb_per_s == Approx(300.0).epsilon(1e-5));
    CHECK(to_seconds(p.collectives[0].alpha) == Approx(15e-6).epsilon(1e-5));
}

TEST_CASE("profile round trip: the compute model prices measured kernels at their measured time",
          "[calibrate]") {
    const hw::HardwareProfile p = round_trip(fit_profile(synthetic(), {{"gpu", "h100-sxm-80gb"}}));
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    const hw::ComputeModel model(catalog.gpu("h100-sxm-80gb"), &p);
    // A measured shape: rate X = flops / (t - launch), so launch + flops / X = t.
    for (std::int64_t m : {2048, 8192}) {
        const sim::Op op = gemm_op(m, 8192, 2048);
        const double t = kLaunch + op.flops.value / (rate_tflops(m, 8192, 2048) * 1e12);
        CHECK(model.gemm_rate(op).value == Approx(rate_tflops(m, 8192, 2048) * 1e12).epsilon(1e-5));
        CHECK(to_seconds(model.duration(op)) == Approx(t).epsilon(1e-5));
    }
    // Batched (attention) GEMM of the measured shape: its own measured time, not the plain grid's
    // rate for m x batch rows.
    sim::Op batched = gemm_op(2048, 2048, 128);
    batched.kind = sim::OpKind::BatchedGemm;
    batched.shape.batch = 64;
    batched.flops = Flops(2.0 * 2048 * 2048 * 128 * 64);
    CHECK(to_seconds(model.duration(batched)) == Approx(1e-3).epsilon(1e-5));
    // Memory-bound: the measured size is priced at launch + bytes / measured bandwidth.
    sim::Op ln;
    ln.kind = sim::OpKind::LayerNorm;
    ln.bytes = Bytes(1e9);
    CHECK(to_seconds(model.duration(ln)) == Approx(kLaunch + 1e9 / 2500e9).epsilon(1e-5));
}

TEST_CASE("profile round trip: GEMM rates between two measured shapes are monotone", "[calibrate]") {
    // Along m from 2048 to 8192 (n = k = 8192) the data rise from 375 to 475 TFLOP/s; the
    // log-space interpolation must rise with m in between and stay inside [375, 475], and the
    // time per FLOP must fall.
    const hw::HardwareProfile p = round_trip(fit_profile(synthetic(), {}));
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    const hw::ComputeModel model(catalog.gpu("h100-sxm-80gb"), &p);
    double last_rate = 0.0, last_time_per_flop = 1.0;
    for (std::int64_t m = 2048; m <= 8192; m += 512) {
        const double r = p.gemm_rate(sim::Precision::Bf16, m, 8192, 8192)->value / 1e12;
        CHECK(r >= last_rate);
        CHECK(r >= 375.0 - 1e-6);
        CHECK(r <= 475.0 + 1e-6);
        const sim::Op op = gemm_op(m, 8192, 8192);
        const double per_flop = to_seconds(model.duration(op)) / op.flops.value;
        CHECK(per_flop <= last_time_per_flop);
        last_rate = r;
        last_time_per_flop = per_flop;
    }
    // Halfway in log m (4096): the mean of the two ends.
    CHECK(p.gemm_rate(sim::Precision::Bf16, 4096, 8192, 8192)->value == Approx(425e12).epsilon(1e-5));
}
