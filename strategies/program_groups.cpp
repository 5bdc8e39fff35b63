#include "strategies/program_groups.hpp"

#include <algorithm>

#include "strategies/group_slots.hpp"

namespace cuboid {
namespace {

using Index = std::uint32_t;

Index add_group(sim::Program& p, std::vector<std::uint32_t> ranks, std::uint32_t label) {
    p.groups.push_back(sim::Group{std::move(ranks), label});
    return static_cast<Index>(p.groups.size() - 1);
}

// Pair group between the same (tp, dp) position of two stages, lower stage first.
std::vector<std::uint32_t> pair(const Layout& l, int tp, int dp, int a, int b) {
    const std::uint32_t ra = l.rank(tp, dp, a), rb = l.rank(tp, dp, b);
    return a < b ? std::vector<std::uint32_t>{ra, rb} : std::vector<std::uint32_t>{rb, ra};
}

}  // namespace

int next_stage(const Layout& l, int stage) {
    if (stage + 1 < l.pipeline) return stage + 1;
    return (l.virtual_stages > 1 && l.pipeline > 1) ? 0 : -1;
}

int prev_stage(const Layout& l, int stage) {
    if (stage > 0) return stage - 1;
    return (l.virtual_stages > 1 && l.pipeline > 1) ? l.pipeline - 1 : -1;
}

void build_groups(sim::Program& p, const Layout& l, const Labels& labels) {
    const int t = l.tensor, d = l.data, pp = l.pipeline;
    const auto at = [&](int a, int b, int c, int nb, int nc) {
        return static_cast<std::size_t>((a * nb + b) * nc + c);
    };
    std::vector<Index> tp_group(static_cast<std::size_t>(d * pp)), dp_group(static_cast<std::size_t>(t * pp));
    std::vector<Index> act(static_cast<std::size_t>(t * d * pp)), grad(act.size());
    p.groups.reserve(tp_group.size() + dp_group.size() + 2 * act.size());
    for (int s = 0; s < pp; ++s) {
        for (int j = 0; j < d; ++j) {
            std::vector<std::uint32_t> ranks;
            for (int i = 0; i < t; ++i) ranks.push_back(l.rank(i, j, s));
            tp_group[static_cast<std::size_t>(s * d + j)] = add_group(p, std::move(ranks), labels.group_tp);
        }
        for (int i = 0; i < t; ++i) {
            std::vector<std::uint32_t> ranks;
            for (int j = 0; j < d; ++j) ranks.push_back(l.rank(i, j, s));
            dp_group[static_cast<std::size_t>(s * t + i)] = add_group(p, std::move(ranks), labels.group_dp);
        }
    }
    // act[s]: activations s -> next(s); grad[s]: gradients next(s) -> s.
    for (int s = 0; s < pp; ++s) {
        const int n = next_stage(l, s);
        if (n < 0) continue;
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < d; ++j) {
                act[at(s, i, j, t, d)] = add_group(p, pair(l, i, j, s, n), labels.group_pp_act);
                grad[at(s, i, j, t, d)] = add_group(p, pair(l, i, j, s, n), labels.group_pp_grad);
            }
    }
    p.ranks.resize(static_cast<std::size_t>(l.gpus()));
    for (std::uint32_t r = 0; r < p.ranks.size(); ++r) {
        const int i = l.tp_of(r), j = l.dp_of(r), s = l.stage_of(r);
        const Index tp = tp_group[static_cast<std::size_t>(s * d + j)];
        std::vector<std::uint32_t> g(slot::kCount, tp);
        g[slot::kData] = dp_group[static_cast<std::size_t>(s * t + i)];
        if (const int n = next_stage(l, s); n >= 0) {
            g[slot::kActToNext] = act[at(s, i, j, t, d)];
            g[slot::kGradFromNext] = grad[at(s, i, j, t, d)];
        }
        if (const int q = prev_stage(l, s); q >= 0) {
            g[slot::kActFromPrev] = act[at(q, i, j, t, d)];
            g[slot::kGradToPrev] = grad[at(q, i, j, t, d)];
        }
        p.ranks[r] = sim::RankProgram{static_cast<std::uint32_t>(s), std::move(g)};
    }
}

}  // namespace cuboid
