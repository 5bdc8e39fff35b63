#include "strategies/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace cuboid {
namespace {

std::vector<PipelineStep> gpipe(int m) {
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(2 * m));
    for (int i = 0; i < m; ++i) out.push_back({true, i, 0});
    for (int i = m - 1; i >= 0; --i) out.push_back({false, i, 0});
    return out;
}

// Chunked 1F1B: forward and backward number k map to (micro, chunk) through fwd/bwd; with v = 1
// and warm-up min(p-s-1, m) this is plain 1F1B.
template <class Fwd, class Bwd>
std::vector<PipelineStep> one_f_one_b(int total, int warmup, Fwd fwd, Bwd bwd) {
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(2 * total));
    for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
    for (int k = 0; k < total - warmup; ++k) {
        out.push_back(fwd(warmup + k));
        out.push_back(bwd(k));
    }
    for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
    return out;
}

}  // namespace

std::vector<PipelineStep> stage_schedule(Schedule schedule, int p, int m, int v, int stage) {
    switch (schedule) {
        case Schedule::GPipe: return gpipe(m);
        case Schedule::OneFOneB: {
            const auto f = [](int k) { return PipelineStep{true, k, 0}; };
            const auto b = [](int k) { return PipelineStep{false, k, 0}; };
            return one_f_one_b(m, std::min(p - stage - 1, m), f, b);
        }
        case Schedule::Interleaved: {
            const auto micro = [p, v](int k) { return (k / (p * v)) * p + k % p; };
            const auto f = [=](int k) { return PipelineStep{true, micro(k), (k / p) % v}; };
            const auto b = [=](int k) { return PipelineStep{false, micro(k), v - 1 - (k / p) % v}; };
            const int total = m * v;
            return one_f_one_b(total, std::min(total, 2 * (p - stage - 1) + (v - 1) * p), f, b);
        }
        case Schedule::ShiftedCriticalPath: break;
    }
    throw std::logic_error("stage_schedule: schedule not supported by the builder");
}

}  // namespace cuboid
