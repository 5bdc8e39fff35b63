#include "strategies/program_symmetry.hpp"

namespace cuboid {
namespace {

// rank(t, d, p) -> rank(t + dt mod T, d + dd mod D, p), as Layout::rank numbers them.
sim::RankMap shift(const Layout& l, int dt, int dd) {
    sim::RankMap g(static_cast<std::size_t>(l.gpus()));
    for (std::uint32_t r = 0; r < g.size(); ++r) {
        g[r] = l.rank((l.tp_of(r) + dt) % l.tensor, (l.dp_of(r) + dd) % l.data, l.stage_of(r));
    }
    return g;
}

// tp -> the next tensor index inside its block of b (b divides T), the rest of the rank kept.
sim::RankMap block_shift(const Layout& l, int b) {
    sim::RankMap g(static_cast<std::size_t>(l.gpus()));
    for (std::uint32_t r = 0; r < g.size(); ++r) {
        const int t = l.tp_of(r);
        g[r] = l.rank(t / b * b + (t + 1) % b, l.dp_of(r), l.stage_of(r));
    }
    return g;
}

std::vector<int> proper_divisors(int n) {
    std::vector<int> d;
    for (int b = 1; b < n; ++b) {
        if (n % b == 0) d.push_back(b);
    }
    return d;
}

}  // namespace

std::vector<sim::RankMap> symmetry_generators(const Layout& layout, TensorMode mode) {
    std::vector<sim::RankMap> gens;
    // A data shift maps ZeRO-3's shard groups and the context groups (consecutive data indices)
    // onto each other only in whole groups.
    // ... and the expert groups (layout.hpp) by whole expert x expert-tensor blocks of a stage's
    // ranks, or, when one block is the whole stage, by whole expert-tensor groups.
    const int etp = layout.experts ? layout.expert_tensor : 1;
    const int expert_block = layout.experts ? layout.expert * etp : 1;
    const auto keeps_expert_groups = [&](int b) {
        const int ranks = b * layout.tensor;
        return ranks % expert_block == 0 || (expert_block == layout.tensor * layout.data && ranks % etp == 0);
    };
    for (const int b : proper_divisors(layout.data))
        if ((b % layout.shard_size() == 0 || !layout.hybrid_sharding()) && b % layout.context == 0 &&
            keeps_expert_groups(b))
            gens.push_back(shift(layout, 0, b));
    if (mode == TensorMode::OneD) {
        for (const int b : proper_divisors(layout.tensor)) gens.push_back(shift(layout, b, 0));
        for (const int b : proper_divisors(layout.tensor)) {
            if (b > 1) gens.push_back(block_shift(layout, b));
        }
    }
    return gens;
}

}  // namespace cuboid
