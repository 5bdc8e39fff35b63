#include "strategies/goodput.hpp"

#include <cmath>

namespace cuboid {
namespace {
constexpr double kNeverSeconds = 1e15;  // 30 million years
}  // namespace

double daly_interval(double delta, double mtbf) {
    if (delta >= 2.0 * mtbf) return mtbf;  // Daly's eq. 37 holds for delta < 2M; beyond, tau = M
    const double x = delta / (2.0 * mtbf);
    return std::sqrt(2.0 * delta * mtbf) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta;
}

double expected_wall_time(double useful, double tau, double delta, double restart, double mtbf) {
    return mtbf * std::exp(restart / mtbf) * std::expm1((tau + delta) / mtbf) * useful / tau;
}

Goodput goodput_of(const ReliabilitySpec& spec, double ideal_s, int gpus, double checkpoint_bytes) {
    constexpr double kSecondsPerDay = 86400.0;
    Goodput g;
    g.failures_per_gpu_day = spec.failures_per_gpu_day.value_or(kLlama3FailuresPerGpuDay);
    g.storage_gb_per_s = spec.checkpoint_gb_per_s.value_or(kLlama3StorageGbPerS);
    g.checkpoint_bytes = checkpoint_bytes;
    g.checkpoint_write_s = checkpoint_bytes / (g.storage_gb_per_s * 1e9);
    g.restart_s = g.checkpoint_write_s + spec.restart_overhead_s.value_or(0.0);
    g.effective_time_to_train_s = ideal_s;
    if (g.failures_per_gpu_day <= 0.0 || gpus <= 0) {  // nothing fails: no checkpoint needed
        g.mtbf_s = INFINITY;
        g.checkpoint_interval_s = spec.checkpoint_interval_s.value_or(INFINITY);
        return g;
    }
    g.mtbf_s = kSecondsPerDay / (g.failures_per_gpu_day * gpus);
    g.interval_optimal = !spec.checkpoint_interval_s.has_value();
    g.checkpoint_interval_s = spec.checkpoint_interval_s.value_or(daly_interval(g.checkpoint_write_s, g.mtbf_s));
    const double wall = expected_wall_time(ideal_s, g.checkpoint_interval_s, g.checkpoint_write_s, g.restart_s, g.mtbf_s);
    if (!std::isfinite(wall) || wall > kNeverSeconds) {
        g.goodput = 0.0;
        g.effective_time_to_train_s.reset();
        return g;
    }
    g.goodput = wall > 0.0 ? ideal_s / wall : 1.0;
    g.effective_time_to_train_s = wall;
    return g;
}

}  // namespace cuboid
