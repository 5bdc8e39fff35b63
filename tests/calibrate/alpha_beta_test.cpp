#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "calibrate/fit/alpha_beta.hpp"
#include "calibrate/fit/stats.hpp"
#include "calibrate/fit/tables.hpp"

using namespace cuboid;
using namespace cuboid::calibrate;

namespace {

// nccl-tests' size sweep: 1 KiB to 1 GiB, doubling (21 sizes).
std::vector<double> sweep() {
    std::vector<double> v;
    for (double b = 1024; b <= 1073741824.0; b *= 2) v.push_back(b);
    return v;
}

constexpr double kAlpha = 20e-6;  // s: an NVLink all-reduce's latency scale (hardware.md §6.3)
constexpr double kBeta = 200e9;   // B/s

}  // namespace

TEST_CASE("alpha-beta: exact points give the parameters back", "[calibrate]") {
    std::vector<TransferSample> s;
    for (double b : sweep()) s.push_back({b, kAlpha + b / kBeta});
    const AlphaBeta f = fit_alpha_beta(s);
    // The model is linear in (alpha, 1/beta) and the points lie on it: the least-squares solution
    // is the generating one up to rounding.
    CHECK(to_seconds(f.alpha) == Approx(kAlpha).epsilon(1e-6));
    CHECK(f.beta.value == Approx(kBeta).epsilon(1e-9));
    CHECK(f.max_relative_error < 1e-6);
    CHECK(f.points == 21);
}

TEST_CASE("alpha-beta: +-0.5% noise moves the parameters by less than 1%", "[calibrate]") {
    // Multiplicative noise of +-0.5% alternating in sign. The weighted fit minimises relative
    // residuals; the smallest points (t within 0.03% of alpha at 1 KiB) pin alpha to within their
    // noise, the largest (alpha is 0.4% of t at 1 GiB) pin 1/beta likewise, so both stay within
    // about the noise amplitude, 0.5%, well inside 1%.
    std::vector<TransferSample> s;
    int i = 0;
    for (double b : sweep()) s.push_back({b, (kAlpha + b / kBeta) * (1.0 + ((i++ % 2) ? 0.005 : -0.005))});
    const AlphaBeta f = fit_alpha_beta(s);
    CHECK(to_seconds(f.alpha) == Approx(kAlpha).epsilon(0.01));
    CHECK(f.beta.value == Approx(kBeta).epsilon(0.01));
    CHECK(f.max_relative_error == Approx(0.005).epsilon(0.5));  // residuals are the noise
}

TEST_CASE("alpha-beta: points through the origin give alpha 0, never negative", "[calibrate]") {
    // Times that bend below a straight line (a bandwidth that improves with size) would give a
    // negative intercept; the fit clamps it and refits the bandwidth.
    std::vector<TransferSample> s;
    for (double b : sweep()) s.push_back({b, b / kBeta * (b < 1e6 ? 0.8 : 1.0)});
    const AlphaBeta f = fit_alpha_beta(s);
    CHECK(f.alpha.value == 0);
    CHECK(f.beta.value > 0.0);
    std::vector<TransferSample> exact;
    for (double b : sweep()) exact.push_back({b, b / kBeta});
    CHECK(fit_alpha_beta(exact).beta.value == Approx(kBeta).epsilon(1e-6));
}

TEST_CASE("alpha-beta: too few or unusable points are refused", "[calibrate]") {
    CHECK_THROWS_AS(fit_alpha_beta({{1024, 1e-5}}), std::invalid_argument);
    CHECK_THROWS_AS(fit_alpha_beta({{1024, 1e-5}, {1024, 2e-5}}), std::invalid_argument);
    CHECK_THROWS_AS(fit_alpha_beta({{1024, 1e-5}, {2048, 0.0}}), std::invalid_argument);
}

TEST_CASE("collective fits use nccl-tests' bus bytes", "[calibrate]") {
    // All-reduce on 8 ranks moves 2(P-1)/P = 1.75 S per rank over the bottleneck link, so a run
    // at bus bandwidth 230 GB/s takes alpha + 1.75 S / 230e9 (hardware.md §5.0).
    std::vector<CollectivePoint> points;
    for (double b : sweep()) points.push_back({"all-reduce", 8, b, 45e-6 + 1.75 * b / 230e9});
    for (double b : sweep()) points.push_back({"send-recv", 2, b, 8e-6 + b / 40e9});
    const auto fits = collective_fits(points);
    REQUIRE(fits.size() == 2);
    CHECK(fits[0].sample.kind == sim::OpKind::AllReduce);
    CHECK(fits[0].sample.ranks == 8);
    CHECK(fits[0].sample.bus_gb_per_s == Approx(230.0).epsilon(1e-6));
    CHECK(to_seconds(fits[0].sample.alpha) == Approx(45e-6).epsilon(1e-6));
    CHECK(fits[1].sample.kind == sim::OpKind::Send);
    CHECK(fits[1].sample.bus_gb_per_s == Approx(40.0).epsilon(1e-6));
}

TEST_CASE("median of timings", "[calibrate]") {
    CHECK(median({5.0, 1.0, 3.0}) == 3.0);
    CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // mean of the middle pair 2 and 3
    CHECK(median({1.0, 1.0, 100.0}) == 1.0);     // one outlier does not move it
    CHECK(median({}) == 0.0);
}
