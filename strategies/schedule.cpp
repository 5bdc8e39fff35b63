#include "strategies/schedule.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace cuboid {
namespace {

std::vector<PipelineStep> gpipe(int m) {
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(2 * m));
    for (int i = 0; i < m; ++i) out.push_back({Pass::Forward, i, 0});
    for (int i = m - 1; i >= 0; --i) out.push_back({Pass::Backward, i, 0});
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
            const auto f = [](int k) { return PipelineStep{Pass::Forward, k, 0}; };
            const auto b = [](int k) { return PipelineStep{Pass::Backward, k, 0}; };
            return one_f_one_b(m, std::min(p - stage - 1, m), f, b);
        }
        case Schedule::Interleaved: {
            const auto micro = [p, v](int k) { return (k / (p * v)) * p + k % p; };
            const auto f = [=](int k) { return PipelineStep{Pass::Forward, micro(k), (k / p) % v}; };
            const auto b = [=](int k) { return PipelineStep{Pass::Backward, micro(k), v - 1 - (k / p) % v}; };
            const int total = m * v;
            return one_f_one_b(total, std::min(total, 2 * (p - stage - 1) + (v - 1) * p), f, b);
        }
        case Schedule::ShiftedCriticalPath: return scp_stage_schedule(p, m, stage);
        case Schedule::ZeroBubbleH1: return zb_h1_stage_schedule(p, m, stage);
        case Schedule::ZeroBubbleV: return zb_v_stage_schedule(p, m, stage);
    }
    throw std::logic_error("stage_schedule: unknown schedule");
}

bool splits_backward(Schedule schedule) {
    return schedule == Schedule::ZeroBubbleH1 || schedule == Schedule::ZeroBubbleV;
}

std::string step_words(const std::vector<PipelineStep>& steps, bool chunks) {
    std::ostringstream out;
    static constexpr const char* kWord[] = {"F", "Fc", "R", "B", "W"};  // indexed by Pass
    for (const PipelineStep& s : steps) {
        out << (out.tellp() > 0 ? " " : "") << kWord[static_cast<int>(s.pass)] << s.micro;
        if (chunks) out << "." << s.chunk;
    }
    return out.str();
}

}  // namespace cuboid
