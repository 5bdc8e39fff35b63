#include "strategies/program_groups.hpp"

#include <utility>
#include <vector>

#include "strategies/group_families.hpp"
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

// The slot an unfilled slot aliases: the shard groups are the whole reducing groups when the state
// is not hybrid-sharded (kShard the data group, kExpertShard the expert-data group), every other
// slot the tensor group (its ops never run). Each alias is a lower slot, filled or aliased first.
std::uint16_t unsharded_alias(std::uint16_t k) {
    if (k == slot::kShard) return slot::kData;
    if (k == slot::kExpertShard) return slot::kExpertData;
    return slot::kTensor;
}

}  // namespace

// Interleaving wraps around from the last stage to the first; ZB-V's V turns on the last stage.
int next_stage(const Layout& l, int stage) {
    if (stage + 1 < l.pipeline) return stage + 1;
    return (l.virtual_stages > 1 && !l.v_shape && l.pipeline > 1) ? 0 : -1;
}

int prev_stage(const Layout& l, int stage) {
    if (stage > 0) return stage - 1;
    return (l.virtual_stages > 1 && !l.v_shape && l.pipeline > 1) ? l.pipeline - 1 : -1;
}

void build_groups(sim::Program& p, const Layout& l, const Labels& labels, bool tied_embedding, bool parameter_gathers,
                  bool expert_gathers) {
    const int t = l.tensor, d = l.data, pp = l.pipeline;
    const auto at = [&](int a, int b, int c, int nb, int nc) {
        return static_cast<std::size_t>((a * nb + b) * nc + c);
    };
    // Every rank's slots: each family's group, then the pipeline's and the embedding's pairs.
    const auto gpus = static_cast<std::size_t>(l.gpus());
    std::vector<std::vector<std::uint32_t>> slots(gpus);
    for (std::size_t r = 0; r < gpus; ++r) slots[r].assign(slot::kCount, 0);
    std::vector<bool> filled(slot::kCount, false);
    for (const GroupFamily& family : group_families(l, parameter_gathers, expert_gathers)) {
        RankGrid::Partition part = family.grid.partition(family.varying);
        const auto first = static_cast<Index>(p.groups.size());
        for (std::vector<std::uint32_t>& ranks : part.groups) add_group(p, std::move(ranks), labels.*family.label);
        for (std::size_t r = 0; r < gpus; ++r) slots[r][family.slot] = first + part.group_of[r];
        filled[family.slot] = true;
    }
    for (std::size_t r = 0; r < gpus; ++r)
        for (std::uint16_t k = 0; k < slot::kCount; ++k)
            if (!filled[k]) slots[r][k] = slots[r][unsharded_alias(k)];
    // act[s]: activations s -> next(s); grad[s]: gradients next(s) -> s.
    std::vector<Index> act(static_cast<std::size_t>(t * d * pp)), grad(act.size());
    std::vector<Index> act_up, grad_up;  // ZB-V: act_up[s] next(s) -> s, grad_up[s] s -> next(s)
    if (l.v_shape) act_up.resize(act.size()), grad_up.resize(act.size());
    for (int s = 0; s < pp; ++s) {
        const int n = next_stage(l, s);
        if (n < 0) continue;
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < d; ++j) {
                act[at(s, i, j, t, d)] = add_group(p, pair(l, i, j, s, n), labels.group_pp_act);
                grad[at(s, i, j, t, d)] = add_group(p, pair(l, i, j, s, n), labels.group_pp_grad);
                if (!l.v_shape) continue;
                act_up[at(s, i, j, t, d)] = add_group(p, pair(l, i, j, s, n), labels.group_pp_act);
                grad_up[at(s, i, j, t, d)] = add_group(p, pair(l, i, j, s, n), labels.group_pp_grad);
            }
    }
    // Embedding groups (tied GPT embedding, p > 1): {first stage, last stage} per (tensor, data)
    // position, Megatron-LM's `embedding_group` (parallel_state.py: the first and last rank of each
    // pipeline group), on which finalize_model_grads all-reduces the word embedding's gradient.
    std::vector<Index> emb;
    if (tied_embedding && l.ends_apart())
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < d; ++j) emb.push_back(add_group(p, pair(l, i, j, 0, pp - 1), labels.group_emb));
    p.ranks.resize(gpus);
    for (std::uint32_t r = 0; r < p.ranks.size(); ++r) {
        const int i = l.tp_of(r), j = l.dp_of(r), s = l.stage_of(r);
        std::vector<std::uint32_t>& g = slots[r];
        if (!emb.empty() && (s == 0 || s == l.head_stage())) g[slot::kEmbedding] = emb[static_cast<std::size_t>(i * d + j)];
        if (const int n = next_stage(l, s); n >= 0) {
            g[slot::kActToNext] = act[at(s, i, j, t, d)];
            g[slot::kGradFromNext] = grad[at(s, i, j, t, d)];
            if (l.v_shape) {
                g[slot::kActFromNext] = act_up[at(s, i, j, t, d)];
                g[slot::kGradToNext] = grad_up[at(s, i, j, t, d)];
            }
        }
        if (const int q = prev_stage(l, s); q >= 0) {
            g[slot::kActFromPrev] = act[at(q, i, j, t, d)];
            g[slot::kGradToPrev] = grad[at(q, i, j, t, d)];
            if (l.v_shape) {
                g[slot::kActToPrev] = act_up[at(q, i, j, t, d)];
                g[slot::kGradFromPrev] = grad_up[at(q, i, j, t, d)];
            }
        }
        p.ranks[r] = sim::RankProgram{static_cast<std::uint32_t>(s), std::move(g)};
    }
}

}  // namespace cuboid
