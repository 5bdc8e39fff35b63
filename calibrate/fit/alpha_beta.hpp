// Alpha-beta (latency-bandwidth) fit of measured transfer times: t = alpha + x / beta, where x is
// the bytes the model charges against the bandwidth (for collectives, nccl-tests' bus bytes:
// hardware.md §5.0, hardware_models/collectives.hpp bus_factor).
//
// Weighted least squares on the RELATIVE error: minimise sum_i ((alpha + x_i/beta - t_i) / t_i)^2.
// Why: the points span 1 KiB to 1 GiB, six decades of time. An unweighted fit is decided by the
// largest messages alone (their residuals are microseconds-to-milliseconds, the small ones'
// nanoseconds), so alpha comes out as noise, possibly negative. Dividing by t_i gives every
// point the same say: the small messages (t ~ alpha) fix alpha, the large ones (t ~ x/beta) fix
// beta, and no threshold between "small" and "large" has to be chosen by hand. The model stays
// linear in (alpha, 1/beta), so the solution is one small least-squares solve (Eigen QR).
#pragma once

#include <vector>

#include "sim/units.hpp"

namespace cuboid::calibrate {

struct TransferSample {
    double bytes = 0.0;    // x: bytes charged against the bandwidth
    double seconds = 0.0;  // measured time
};

struct AlphaBeta {
    Time alpha{0};                   // fixed cost per call
    BytesPerSecond beta{0.0};        // asymptotic bandwidth
    double max_relative_error = 0.0; // worst |model - measured| / measured over the points
    int points = 0;
};

// Needs >= 2 points with distinct sizes and positive times; throws std::invalid_argument
// otherwise. A negative alpha (the points bend the wrong way) is clamped to 0 and beta refitted.
AlphaBeta fit_alpha_beta(const std::vector<TransferSample>& samples);

// Model time of the fit for x bytes.
double predict_seconds(const AlphaBeta& fit, double bytes);

}  // namespace cuboid::calibrate
