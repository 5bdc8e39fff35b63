#include "strategies/cli/search_space.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>

#include "strategies/names.hpp"
#include "strategies/rank_grid.hpp"
#include "strategies/schedule_kinds.hpp"

namespace cuboid::cli {
namespace {

std::vector<int> powers_of_two_up_to(int limit) {
    std::vector<int> v;
    for (int x = 1; x <= limit; x *= 2) v.push_back(x);
    return v;
}

std::vector<std::string> all_names(const std::vector<NamedValue>& named) {
    std::vector<std::string> v;
    for (const auto& n : named) v.push_back(n.name);
    return v;
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

// The plan dimensions of one candidate, before they become a point's text values.
struct Choice {
    int tensor, pipeline, data, micro_batch;
    std::string schedule;
    int virtual_stages;
    std::string recompute, tensor_mode;
    int overlap_chunks;
    bool sequence_parallel;
    int zero_stage;
    int context;
    std::string context_mode;
    int expert = 0, expert_tensor = 0;  // 0: not a mixture of experts (no axes)
    // The parallel.shard_group axis (hybrid sharding): absent when the search has none; else
    // this point's shard group, 0 for all data x context ranks (written as that count).
    bool shard_axis = false;
    int shard_group = 0;

    SweepPoint point() const {
        SweepPoint p{std::to_string(tensor),         std::to_string(pipeline),   std::to_string(data),
                     std::to_string(micro_batch),    schedule,                   std::to_string(virtual_stages),
                     recompute,                      tensor_mode,                std::to_string(overlap_chunks),
                     bool_text(sequence_parallel),   std::to_string(zero_stage), std::to_string(context),
                     context_mode};
        if (expert > 0) {
            p.push_back(std::to_string(expert));
            p.push_back(std::to_string(expert_tensor));
        }
        if (shard_axis) p.push_back(std::to_string(shard_group > 0 ? shard_group : data * context));
        return p;
    }
};

// The tensor-parallel settings of one tensor degree: only the defaults when tensor is 1.
void add_tensor_settings(const SearchSpace& sp, Choice c, std::vector<SweepPoint>& out) {
    const bool tp = c.tensor > 1;
    for (const auto& mode : tp ? sp.tensor_mode : std::vector<std::string>{"1d"})
        for (const int chunks : tp ? sp.overlap_chunks : std::vector<int>{1})
            for (const bool seq : tp ? sp.sequence_parallel : std::vector<bool>{false})
                for (const int zero : sp.zero_stage) {
                    c.tensor_mode = mode;
                    c.overlap_chunks = chunks;
                    c.sequence_parallel = seq;
                    c.zero_stage = zero;
                    // Hybrid sharding shards ZeRO-3's state only: the other stages take one point.
                    const int replicas = c.data * c.context;
                    for (const int sg : zero == 3 && c.shard_axis ? sp.shard_group : std::vector<int>{0}) {
                        if (sg > 0 && (sg >= replicas || replicas % sg != 0 || sg % c.context != 0)) continue;
                        c.shard_group = sg;
                        out.push_back(c.point());
                    }
                }
}

void add_schedules(const SearchSpace& sp, Choice c, std::vector<SweepPoint>& out) {
    for (const auto& schedule : sp.schedule) {
        // The chunks per stage of the schedule's row: the space's virtual stages for a schedule
        // of several (which needs more than one stage: one chunk per stage is plain 1F1B), else
        // its own count (ZB-V's two, in a V).
        const int fixed = schedule_kind(parse_schedule(schedule, {})).chunks;
        if (fixed == 0 && c.pipeline == 1) continue;
        const std::vector<int> chunks = fixed == 0 ? sp.virtual_stages : std::vector<int>{fixed};
        for (const int v : chunks)
            for (const auto& recompute : sp.recompute) {
                c.schedule = schedule;
                c.virtual_stages = v;
                c.recompute = recompute;
                add_tensor_settings(sp, c, out);
            }
    }
}

// The rules of the degrees beyond dividing their view's ranks.
bool any_degree(int, const Scenario&) { return true; }
// Context parallelism splits each sequence into 2c chunks (load-balanced causal attention).
bool splits_sequence(int c, const Scenario& base) { return c == 1 || base.model.seq_len % (2 * c) == 0; }
// No more replicas than samples in the batch.
bool at_most_batch(int d, const Scenario& base) { return d <= base.training.global_batch; }
// Each expert-parallel rank holds a whole number of experts.
bool divides_experts(int ep, const Scenario& base) { return base.model.experts % ep == 0; }

void add_choices(const DegreeView& view, const SearchSpace& sp, const Scenario& base, std::size_t next,
                 std::int64_t remaining, DegreeChoice& partial, std::vector<DegreeChoice>& out) {
    if (next == view.chosen.size()) {
        if (remaining > std::numeric_limits<int>::max()) return;  // no degree is that large
        const int rest = static_cast<int>(remaining);
        if (!view.remainder_fits(rest, base)) return;
        DegreeChoice done = partial;
        done.degrees.emplace_back(view.remainder, rest);
        out.push_back(std::move(done));
        return;
    }
    const DegreeAxis& a = view.chosen[next];
    for (const int v : sp.*a.values) {
        // Divided one degree at a time, so no product of the chosen degrees can overflow.
        if (v < 1 || remaining % v != 0 || !a.fits(v, base)) continue;
        partial.degrees.emplace_back(a.axis, v);
        add_choices(view, sp, base, next + 1, remaining / v, partial, out);
        partial.degrees.pop_back();
    }
}

}  // namespace

const DegreeView& plan_degrees() {
    static const DegreeView view{{{axis::kTensor, &SearchSpace::tensor, any_degree},
                                  {axis::kPipeline, &SearchSpace::pipeline, any_degree},
                                  {axis::kContext, &SearchSpace::context, splits_sequence}},
                                 axis::kData,
                                 at_most_batch};
    return view;
}

const DegreeView& expert_degrees() {
    static const DegreeView view{{{axis::kExpert, &SearchSpace::expert, divides_experts},
                                  {axis::kExpertTensor, &SearchSpace::expert_tensor, any_degree}},
                                 axis::kExpertData,
                                 any_degree};
    return view;
}

int DegreeChoice::at(std::string_view axis) const {
    for (const auto& [name, degree] : degrees)
        if (name == axis) return degree;
    throw std::logic_error("degree choice without the axis " + std::string(axis));
}

std::vector<DegreeChoice> degree_choices(const DegreeView& view, const SearchSpace& space, const Scenario& base,
                                         std::int64_t ranks) {
    std::vector<DegreeChoice> out;
    DegreeChoice partial;
    add_choices(view, space, base, 0, ranks, partial, out);
    return out;
}

SearchSpace full_search_space(const Scenario& base) {
    SearchSpace sp;
    sp.tensor = powers_of_two_up_to(static_cast<int>(std::min<std::int64_t>(base.cluster.gpus_per_node, base.cluster.gpus())));
    // An NVLink domain of several nodes (GB200 NVL72) keeps larger tensor groups on NVLink: the
    // powers of two that tile it (8 on 72 GPUs).
    for (int t = 2 * base.cluster.gpus_per_node; t <= base.cluster.domain_gpus() && t <= base.cluster.gpus(); t *= 2)
        if (base.cluster.domain_gpus() % t == 0 && t % base.cluster.gpus_per_node == 0) sp.tensor.push_back(t);
    sp.pipeline = powers_of_two_up_to(std::max(1, base.model.layers));
    sp.micro_batch = {1, 2, 4, 8};
    sp.schedule = all_names(schedule_names());
    sp.virtual_stages = {2, 4};
    sp.recompute = all_names(recompute_names());
    sp.tensor_mode = all_names(tensor_mode_names());
    sp.overlap_chunks = {1, 2};
    sp.sequence_parallel = {false, true};
    sp.zero_stage = {0, 1, 2, 3};
    sp.context = {1, 2, 4, 8};
    sp.context_mode = all_names(context_mode_names());
    if (base.model.moe()) {
        sp.expert = powers_of_two_up_to(static_cast<int>(std::min<std::int64_t>(base.model.experts, base.cluster.gpus())));
        sp.expert_tensor = {1, 2, 4, 8};
    }
    sp.shard_group = {0};
    for (int g = 2; g <= base.cluster.domain_gpus() && g < base.cluster.gpus(); g *= 2) sp.shard_group.push_back(g);
    return sp;
}

SearchSpace default_search_space(const Scenario& base) {
    SearchSpace sp = full_search_space(base);
    sp.micro_batch = {1, 2, 4};
    sp.schedule = {"1f1b", "interleaved"};
    sp.recompute = {"selective", "full"};
    sp.tensor_mode = {"1d"};
    sp.overlap_chunks = {1};
    sp.sequence_parallel = {true};
    sp.zero_stage = {0, 1};
    // Context parallelism pays where attention dominates and activations outgrow the GPU.
    constexpr int kLongSequence = 16384;
    sp.context = base.model.seq_len >= kLongSequence ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1};
    sp.context_mode = {"ring"};
    if (base.model.moe()) sp.expert_tensor = {1};
    sp.shard_group = {0};
    return sp;
}

bool SearchSpace::hybrid_sharding() const {
    const bool zero3 = std::find(zero_stage.begin(), zero_stage.end(), 3) != zero_stage.end();
    return zero3 && std::any_of(shard_group.begin(), shard_group.end(), [](int sg) { return sg > 0; });
}

SweepAxes search_axes(bool experts, bool shard_groups) {
    const char* keys[] = {"parallel.tensor",          "parallel.pipeline",    "parallel.data",
                          "training.micro_batch",     "parallel.schedule",    "parallel.virtual_stages",
                          "parallel.recompute",       "parallel.tensor_mode", "parallel.overlap_chunks",
                          "parallel.sequence_parallel", "parallel.zero_stage", "parallel.context",
                          "parallel.context_mode"};
    SweepAxes axes;
    for (const char* k : keys) axes.emplace_back(k, std::vector<std::string>{});
    if (experts)
        for (const char* k : {"parallel.expert", "parallel.expert_tensor"}) axes.emplace_back(k, std::vector<std::string>{});
    if (shard_groups) axes.emplace_back("parallel.shard_group", std::vector<std::string>{});
    return axes;
}

SearchCandidates search_candidates(const SearchSpace& sp, const Scenario& base) {
    const bool experts = base.model.moe();
    SearchCandidates c{search_axes(experts, sp.hybrid_sharding()), {}};
    const int batch = base.training.global_batch;
    for (const DegreeChoice& plan : degree_choices(plan_degrees(), sp, base, base.cluster.gpus())) {
        const int t = plan.at(axis::kTensor), p = plan.at(axis::kPipeline), cp = plan.at(axis::kContext);
        const int d = plan.at(axis::kData);
        for (const auto& mode : cp > 1 ? sp.context_mode : std::vector<std::string>{"ring"})
            for (const int mb : sp.micro_batch) {
                if (mb < 1 || batch % (mb * d) != 0) continue;
                Choice choice{t, p, d, mb, "", 1, "", "", 1, false, 0, cp, mode};
                choice.shard_axis = sp.hybrid_sharding();
                if (!experts) {
                    add_schedules(sp, choice, c.points);
                    continue;
                }
                // The expert layers regroup a stage's t*c*d ranks as etp x ep x expert-data.
                for (const DegreeChoice& e : degree_choices(expert_degrees(), sp, base, std::int64_t{t} * cp * d)) {
                    Choice with = choice;
                    with.expert = e.at(axis::kExpert);
                    with.expert_tensor = e.at(axis::kExpertTensor);
                    add_schedules(sp, with, c.points);
                }
            }
    }
    // The value lists of the axes (the table sizes its columns from them), in first-seen order.
    for (std::size_t a = 0; a < c.axes.size(); ++a) {
        std::set<std::string> seen;
        for (const auto& point : c.points)
            if (seen.insert(point[a]).second) c.axes[a].second.push_back(point[a]);
    }
    return c;
}

Scenario limited_to_max_gpus(Scenario base, const SearchSpace& space) {
    if (!space.max_gpus || *space.max_gpus >= base.cluster.gpus()) return base;
    // Whole nodes where the limit holds at least one; else part of one node.
    if (*space.max_gpus >= base.cluster.gpus_per_node) {
        base.cluster.nodes = *space.max_gpus / base.cluster.gpus_per_node;
    } else {
        base.cluster.nodes = 1;
        base.cluster.gpus_per_node = std::max(1, *space.max_gpus);
        base.cluster_choices.gpus_per_node = base.cluster.gpus_per_node;  // kept if a later key re-applies the GPU's system
        base.cluster.scale_up_domain.reset();                             // part of one node: no NVLink domain beyond it
        base.cluster_choices.scale_up_domain.reset();
    }
    return base;
}

}  // namespace cuboid::cli
