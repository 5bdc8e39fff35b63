#include "strategies/program_groups.hpp"

#include <algorithm>
#include <array>

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

// The axis groups of the tensor group at (dp, stage): for each axis, one group per combination of
// the other coordinates. Returns, per tensor index, the group index of each axis.
std::vector<std::array<Index, 3>> add_axis_groups(sim::Program& p, const Layout& l, int dp, int stage,
                                                   std::uint32_t label) {
    std::vector<std::array<Index, 3>> out(static_cast<std::size_t>(l.tensor));
    for (int axis = 0; axis < 3; ++axis) {
        for (int i = 0; i < l.tensor; ++i) {
            int stride = 1;
            for (int a = 0; a < axis; ++a) stride *= l.tensor_mesh[static_cast<std::size_t>(a)];
            const int base = i - l.mesh_coord(i, axis) * stride;
            if (base != i) continue;  // only the member with coordinate 0 creates the group
            std::vector<std::uint32_t> ranks;
            for (int c = 0; c < l.tensor_mesh[static_cast<std::size_t>(axis)]; ++c)
                ranks.push_back(l.rank(base + c * stride, dp, stage));
            const Index g = add_group(p, std::move(ranks), label);
            for (int c = 0; c < l.tensor_mesh[static_cast<std::size_t>(axis)]; ++c)
                out[static_cast<std::size_t>(base + c * stride)][static_cast<std::size_t>(axis)] = g;
        }
    }
    return out;
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

void build_groups(sim::Program& p, const Layout& l, const Labels& labels, bool tied_embedding, bool parameter_gathers) {
    const int t = l.tensor, d = l.data, pp = l.pipeline;
    const auto at = [&](int a, int b, int c, int nb, int nc) {
        return static_cast<std::size_t>((a * nb + b) * nc + c);
    };
    std::vector<Index> tp_group(static_cast<std::size_t>(d * pp)), dp_group(static_cast<std::size_t>(t * pp));
    std::vector<Index> act(static_cast<std::size_t>(t * d * pp)), grad(act.size());
    std::vector<Index> act_up, grad_up;  // ZB-V: act_up[s] next(s) -> s, grad_up[s] s -> next(s)
    if (l.v_shape) act_up.resize(act.size()), grad_up.resize(act.size());
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
    // ZeRO-3 hybrid sharding: shard groups of consecutive data indices and, across them, the
    // groups of ranks holding the same shard (HSDP's shard and replicate dimensions).
    // ZeRO-3's parameter gathers run on a stream of their own, so they get their own copy of each
    // shard group: a group carries the ops of one stream only, so that its k-th collective is the
    // same op on every member whatever order the members' streams post in.
    const int sg = l.shard_size();
    std::vector<Index> shard, replica, gather;
    if (l.hybrid_sharding() || parameter_gathers)
        for (int s = 0; s < pp; ++s)
            for (int i = 0; i < t; ++i) {
                for (int k = 0; k < d / sg; ++k) {
                    std::vector<std::uint32_t> ranks;
                    for (int j = k * sg; j < (k + 1) * sg; ++j) ranks.push_back(l.rank(i, j, s));
                    if (parameter_gathers) gather.push_back(add_group(p, ranks, labels.group_shard));
                    if (l.hybrid_sharding()) shard.push_back(add_group(p, std::move(ranks), labels.group_shard));
                }
                if (!l.hybrid_sharding()) continue;
                for (int c = 0; c < sg; ++c) {
                    std::vector<std::uint32_t> ranks;
                    for (int j = c; j < d; j += sg) ranks.push_back(l.rank(i, j, s));
                    replica.push_back(add_group(p, std::move(ranks), labels.group_replica));
                }
            }
    // Context groups: c consecutive data indices, in ring order (Megatron-Core's cp group).
    const int cp = l.context;
    std::vector<Index> context;
    if (cp > 1)
        for (int s = 0; s < pp; ++s)
            for (int i = 0; i < t; ++i)
                for (int k = 0; k < d / cp; ++k) {
                    std::vector<std::uint32_t> ranks;
                    for (int j = k * cp; j < (k + 1) * cp; ++j) ranks.push_back(l.rank(i, j, s));
                    context.push_back(add_group(p, std::move(ranks), labels.group_cp));
                }
    // Expert groups: a stage's ranks q = tp + t * dp as q = a + etp * (e + ep * f) (a: expert
    // tensor, e: expert, f: expert-data index); per stage the groups of fixed (a, f), (e, f), (a, e).
    const int etp = l.expert_tensor, ep = l.expert, per_stage = t * d;
    std::vector<Index> expert, expert_tensor, expert_data;  // indexed by stage * per_stage + q
    if (l.experts) {
        expert.resize(static_cast<std::size_t>(per_stage * pp));
        expert_tensor.resize(expert.size());
        expert_data.resize(expert.size());
        const auto rank_of = [&](int q, int s) { return l.rank(q % t, q / t, s); };
        const auto add = [&](std::vector<Index>& out, int s, int first, int stride, int count, std::uint32_t label) {
            std::vector<std::uint32_t> ranks;
            for (int k = 0; k < count; ++k) ranks.push_back(rank_of(first + k * stride, s));
            const Index g = add_group(p, std::move(ranks), label);
            for (int k = 0; k < count; ++k) out[static_cast<std::size_t>(s * per_stage + first + k * stride)] = g;
        };
        for (int s = 0; s < pp; ++s)
            for (int q = 0; q < per_stage; ++q) {
                const int a = q % etp, e = (q / etp) % ep, f = q / (etp * ep);
                if (e == 0) add(expert, s, q, etp, ep, labels.group_ep);
                if (a == 0) add(expert_tensor, s, q, 1, etp, labels.group_etp);
                if (f == 0) add(expert_data, s, q, etp * ep, per_stage / (etp * ep), labels.group_edp);
            }
    }
    // Axis groups only when the layers use them (2d, 3d, atp); else the slots alias the tensor group.
    std::vector<std::vector<std::array<Index, 3>>> axis_groups;
    if (l.multi_axis_mesh())
        for (int s = 0; s < pp; ++s)
            for (int j = 0; j < d; ++j) axis_groups.push_back(add_axis_groups(p, l, j, s, labels.group_tp));
    p.ranks.resize(static_cast<std::size_t>(l.gpus()));
    for (std::uint32_t r = 0; r < p.ranks.size(); ++r) {
        const int i = l.tp_of(r), j = l.dp_of(r), s = l.stage_of(r);
        const Index tp = tp_group[static_cast<std::size_t>(s * d + j)];
        std::vector<std::uint32_t> g(slot::kCount, tp);
        g[slot::kData] = dp_group[static_cast<std::size_t>(s * t + i)];
        g[slot::kShard] = g[slot::kData];
        const auto base = static_cast<std::size_t>(s * t + i);
        const std::size_t shard_index = base * static_cast<std::size_t>(d / sg) + static_cast<std::size_t>(j / sg);
        if (!shard.empty()) {
            g[slot::kShard] = shard[shard_index];
            g[slot::kReplica] = replica[base * static_cast<std::size_t>(sg) + static_cast<std::size_t>(j % sg)];
        }
        if (!gather.empty()) g[slot::kShardGather] = gather[shard_index];
        if (!context.empty())
            g[slot::kContext] = context[base * static_cast<std::size_t>(d / cp) + static_cast<std::size_t>(j / cp)];
        if (!expert.empty()) {
            const auto q = static_cast<std::size_t>(s * t * d + j * t + i);
            g[slot::kExpert] = expert[q];
            g[slot::kExpertTensor] = expert_tensor[q];
            g[slot::kExpertData] = expert_data[q];
        }
        if (!axis_groups.empty())
            for (int a = 0; a < 3; ++a)
                g[slot::tensor_axis(a)] = axis_groups[static_cast<std::size_t>(s * d + j)][static_cast<std::size_t>(i)]
                                                     [static_cast<std::size_t>(a)];
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
