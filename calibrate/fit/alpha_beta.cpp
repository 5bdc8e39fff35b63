#include "calibrate/fit/alpha_beta.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cuboid::calibrate {
namespace {

void check(const std::vector<TransferSample>& samples) {
    if (samples.size() < 2) throw std::invalid_argument("alpha-beta fit: needs at least 2 points");
    for (const auto& s : samples)
        if (!(s.seconds > 0.0) || !(s.bytes >= 0.0))
            throw std::invalid_argument("alpha-beta fit: times must be > 0 and sizes >= 0");
    const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end(),
                                              [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    if (lo->bytes == hi->bytes) throw std::invalid_argument("alpha-beta fit: needs two distinct sizes");
}

// Rows scaled by 1/t_i: [1/t_i, x_i/t_i] * [alpha, 1/beta]^T ~ 1.
Eigen::Vector2d solve_weighted(const std::vector<TransferSample>& samples) {
    const auto n = static_cast<Eigen::Index>(samples.size());
    Eigen::MatrixXd a(n, 2);
    Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        const auto& s = samples[static_cast<std::size_t>(i)];
        a(i, 0) = 1.0 / s.seconds;
        a(i, 1) = s.bytes / s.seconds;
    }
    return a.colPivHouseholderQr().solve(b);
}

// alpha fixed at 0: minimise sum (x_i g / t_i - 1)^2 -> g = sum(x_i/t_i) / sum((x_i/t_i)^2).
double solve_through_origin(const std::vector<TransferSample>& samples) {
    double num = 0.0, den = 0.0;
    for (const auto& s : samples) {
        const double r = s.bytes / s.seconds;
        num += r;
        den += r * r;
    }
    return num / den;
}

}  // namespace

double predict_seconds(const AlphaBeta& fit, double bytes) {
    return to_seconds(fit.alpha) + bytes / fit.beta.value;
}

AlphaBeta fit_alpha_beta(const std::vector<TransferSample>& samples) {
    check(samples);
    Eigen::Vector2d p = solve_weighted(samples);
    if (p(0) < 0.0) p = Eigen::Vector2d(0.0, solve_through_origin(samples));
    if (!(p(1) > 0.0)) throw std::invalid_argument("alpha-beta fit: times do not grow with size");
    AlphaBeta fit;
    fit.alpha = to_time(p(0));
    fit.beta = BytesPerSecond(1.0 / p(1));
    fit.points = static_cast<int>(samples.size());
    for (const auto& s : samples)
        fit.max_relative_error =
            std::max(fit.max_relative_error, std::abs(predict_seconds(fit, s.bytes) - s.seconds) / s.seconds);
    return fit;
}

}  // namespace cuboid::calibrate
