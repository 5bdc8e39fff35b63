// Merak's shifted critical path (SCP) schedule, built from 1F1B by the rules Merak's schedule
// generator applies (HPDL-Group/Merak, Merak/core/pipeline/schedule.py, class
// full_critical_path_1f1b; seed_algorithms §1.1, whose p = 4, m = 8 listing the tests compare):
//  1. cool-down pre-recompute (stages s < p-2): the last p-s-1 micro-batches are forwarded as Fc
//     and their backward becomes R B, so the recompute runs in the cool-down bubble instead of
//     after the gradient arrives;
//  2. the last stage runs plain 1F1B and never recomputes;
//  3. stage p-2 runs an extra warm-up forward, pre-checkpoints micro-batches 0 and 1:
//     Fc0 Fc1 F2 R0 B0 R1 B1 F3 B2 ... F_{m-1} B_{m-2} B_{m-1};
//  4. stage p-3 (1F1B order) forwards micro-batch 0 as Fc and recomputes it before B0.
#include <algorithm>

#include "strategies/schedule.hpp"

namespace cuboid {
namespace {

std::vector<PipelineStep> shifted_stage(int m) {
    std::vector<PipelineStep> out = {{Pass::ForwardCkpt, 0, 0}, {Pass::ForwardCkpt, 1, 0}, {Pass::Forward, 2, 0},
                                     {Pass::Recompute, 0, 0},   {Pass::Backward, 0, 0},    {Pass::Recompute, 1, 0},
                                     {Pass::Backward, 1, 0}};
    for (int i = 3; i < m; ++i) {
        out.push_back({Pass::Forward, i, 0});
        out.push_back({Pass::Backward, i - 1, 0});
    }
    out.push_back({Pass::Backward, m - 1, 0});
    return out;
}

}  // namespace

std::optional<std::string> scp_unsupported_reason(int p, int m) {
    if (p < 2) return "shifted-critical-path needs pipeline >= 2 (it reorders work between stages)";
    if (m < p || m < 4)
        return "shifted-critical-path needs micro-batches >= pipeline and >= 4 (Merak's preconditions); got " +
               std::to_string(m) + " micro-batches for pipeline " + std::to_string(p);
    return std::nullopt;
}

std::vector<PipelineStep> scp_stage_schedule(int p, int m, int stage) {
    if (stage == p - 2) return shifted_stage(m);
    std::vector<PipelineStep> base = stage_schedule(Schedule::OneFOneB, p, m, 1, stage);
    if (stage == p - 1) return base;
    const int cooldown_first = m - (p - stage - 1);  // rule 1: micro-batches cooldown_first..m-1
    const auto pre_checkpointed = [&](int micro) {
        return micro >= cooldown_first || (stage == p - 3 && micro == 0);
    };
    std::vector<PipelineStep> out;
    out.reserve(base.size() + static_cast<std::size_t>(p));
    for (PipelineStep s : base) {
        if (!pre_checkpointed(s.micro)) {
            out.push_back(s);
        } else if (s.pass == Pass::Forward) {
            out.push_back({Pass::ForwardCkpt, s.micro, 0});
        } else {
            out.push_back({Pass::Recompute, s.micro, 0});
            out.push_back(s);
        }
    }
    return out;
}

}  // namespace cuboid
