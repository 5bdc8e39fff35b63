#include "strategies/cli/fitting_changes.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/memory_check.hpp"
#include "strategies/run.hpp"
#include "strategies/run_figures.hpp"

namespace cuboid::cli {
namespace {

using Sets = std::vector<std::string>;

// Each kind's alternatives, least change first: the first one that fits is the suggestion.
// Megatron-Core's recompute modules that drop outputs this model has, beside core_attn: latent
// attention's up-projections, the norms that are modules of their own, the experts' activation.
// (The mlp, moe and shared_experts modules are not offered: they run the MLP's GEMMs, and moe its
// all-to-alls, again in every layer, and stage-aware, which recomputes whole layers only where
// memory needs it, fits whenever they would.)
std::string fine_grained_modules(const ModelSpec& m) {
    std::string modules = "core_attn";
    if (m.mla()) modules += ",mla_up_proj";
    if (m.has_norm_modules()) modules += ",layernorm";
    if (m.moe()) modules += ",moe_act";
    return modules;
}

std::vector<Sets> recompute_steps(const Scenario& s) {
    // Activations kept, most to fewest: none > selective > (latent attention: selective with its
    // up-projections too, Megatron-Core's mla_up_proj) > (selective with every module this model
    // has that drops an output: the norms that are modules, the experts' activation) >
    // stage-aware (only the layers memory needs) > full. Stage-aware after a stage-aware plan
    // that did not fit is full on every stage.
    const Recompute current = s.parallel.recompute;
    const ParallelPlan::RecomputeModules& chosen = s.parallel.recompute_modules;
    const bool mla_up_open = s.model.mla() && !chosen.mla_up_proj;
    const Sets with_up_projections{"parallel.recompute=selective", "parallel.recompute_modules=core_attn,mla_up_proj"};
    const bool fine_open = (s.model.has_norm_modules() && !chosen.layernorm) || (s.model.moe() && !chosen.moe_act);
    const Sets fine_grained{"parallel.recompute=selective", "parallel.recompute_modules=" + fine_grained_modules(s.model)};
    const auto selective_steps = [&](std::vector<Sets>& steps) {
        if (mla_up_open) steps.push_back(with_up_projections);
        if (fine_open) steps.push_back(fine_grained);
    };
    const std::vector<Recompute> order{Recompute::None, Recompute::Selective, Recompute::StageAware,
                                       Recompute::Full};
    std::vector<Sets> steps;
    if (current == Recompute::Selective) selective_steps(steps);
    const auto at = std::find(order.begin(), order.end(), current);
    for (auto r = at == order.end() ? order.end() : at + 1; r != order.end(); ++r) {
        if (current == Recompute::StageAware && *r == Recompute::Full) continue;
        steps.push_back({"parallel.recompute=" + to_string(*r)});
        if (*r == Recompute::Selective) selective_steps(steps);
    }
    return steps;
}

std::vector<Sets> micro_batch_steps(const Scenario& s) {
    std::vector<Sets> steps;
    for (int b = s.training.micro_batch - 1; b >= 1; --b) steps.push_back({fmt::format("training.micro_batch={}", b)});
    return steps;
}

std::vector<Sets> zero_steps(const Scenario& s) {
    std::vector<Sets> steps;
    // Up to the largest stage the key accepts; the plan validation rejects what is not modelled.
    constexpr int kLargestZeroStage = 3;
    for (int z = s.parallel.zero_stage + 1; z <= kLargestZeroStage; ++z)
        steps.push_back({fmt::format("parallel.zero_stage={}", z)});
    return steps;
}

// Larger pipeline degrees over the same GPUs: data parallelism gives way (set explicitly only
// when the scenario sets it; otherwise it follows from the GPU count).
std::vector<Sets> pipeline_steps(const Scenario& s) {
    std::vector<Sets> steps;
    const std::int64_t gpus = s.cluster.gpus();
    const int t = std::max(s.parallel.tensor, 1), c = std::max(s.parallel.context, 1);
    for (int p = s.parallel.pipeline + 1; p <= s.model.layers; ++p) {
        const std::int64_t replica = std::int64_t{t} * c * p;
        if (gpus % replica != 0) continue;
        Sets sets{fmt::format("parallel.pipeline={}", p)};
        if (s.parallel.data > 0) sets.push_back(fmt::format("parallel.data={}", gpus / replica));
        steps.push_back(std::move(sets));
    }
    return steps;
}

// Activation offloading where Megatron-Core allows it (no pipeline, no recomputation): an eighth
// of all but the last layer more at a time (the plan validation refuses the rest).
std::vector<Sets> offload_steps(const Scenario& s) {
    std::vector<Sets> steps;
    if (s.parallel.pipeline != 1 || s.parallel.recompute != Recompute::None) return steps;
    constexpr int kParts = 8;
    const int most = s.model.layers - 1;
    int last = s.training.activation_offload_layers;
    for (int k = 1; k <= kParts; ++k) {
        const int n = (most * k + kParts - 1) / kParts;
        if (n <= last) continue;
        steps.push_back({fmt::format("training.activation_offload_layers={}", n)});
        last = n;
    }
    return steps;
}

std::vector<Sets> steps_of(ChangeKind kind, const Scenario& s) {
    switch (kind) {
        case ChangeKind::SequenceParallel:
            if (s.parallel.tensor > 1 && !s.parallel.sequence_parallel) return {{"parallel.sequence_parallel=true"}};
            return {};
        case ChangeKind::Recompute: return recompute_steps(s);
        case ChangeKind::MicroBatch: return micro_batch_steps(s);
        case ChangeKind::ZeroStage: return zero_steps(s);
        case ChangeKind::Pipeline: return pipeline_steps(s);
        case ChangeKind::GradPrecision: {
            const sim::Precision p = s.training.precision;
            const bool mixed = p == sim::Precision::Bf16 || p == sim::Precision::Fp8;
            if (mixed && !s.training.grad_precision) return {{"training.grad_precision=bf16"}};
            return {};
        }
        case ChangeKind::ActivationOffload: return offload_steps(s);
    }
    return {};
}

// The changed plan when it is valid and its memory walk fits; nothing otherwise.
std::optional<Scenario> memory_fits(const Scenario& s, const Sets& sets, const FitContext& c) {
    try {
        Scenario changed = s;
        apply_overrides(changed, sets, *c.names);
        const Layout layout = validate_plan(changed, *c.builtin);
        const Bytes usable = usable_memory(c.hardware->gpu(), c.memory_headroom);
        if (!check_memory(changed, layout, usable).fits) return std::nullopt;
        return changed;
    } catch (const InputError&) {
        return std::nullopt;  // a change the plan validation (or the key's own check) rejects
    }
}

// The changed plan's run when it fits: validated, its memory walked, then simulated. Nothing
// when it is invalid or does not fit.
std::optional<RunResult> run_if_fits(const Scenario& s, const Sets& sets, const FitContext& c) {
    const std::optional<Scenario> fitting = memory_fits(s, sets, c);
    if (!fitting) return std::nullopt;
    try {
        const Scenario& changed = *fitting;
        RunOptions options;
        options.hardware = c.hardware;
        options.builtin_catalog = c.builtin;
        options.fold = true;  // the same results, fewer events
        options.memory_headroom = c.memory_headroom;
        RunResult r = run_scenario(changed, options);
        if (!r.fits_in_memory) return std::nullopt;
        return r;
    } catch (const InputError&) {
        return std::nullopt;  // a change the plan validation (or the key's own check) rejects
    }
}

}  // namespace

std::string change_kind_name(ChangeKind k) {
    switch (k) {
        case ChangeKind::SequenceParallel: return "sequence_parallel";
        case ChangeKind::Recompute: return "recompute";
        case ChangeKind::MicroBatch: return "micro_batch";
        case ChangeKind::ZeroStage: return "zero_stage";
        case ChangeKind::Pipeline: return "pipeline";
        case ChangeKind::GradPrecision: return "grad_precision";
        case ChangeKind::ActivationOffload: return "activation_offload";
    }
    return "unknown";
}

std::string change_kinds_name(const std::vector<ChangeKind>& kinds) {
    std::string out;
    for (const ChangeKind k : kinds) {
        if (!out.empty()) out += '+';
        out += change_kind_name(k);
    }
    return out;
}

namespace {

constexpr ChangeKind kKinds[] = {ChangeKind::SequenceParallel, ChangeKind::Recompute, ChangeKind::MicroBatch,
                                 ChangeKind::ZeroStage, ChangeKind::Pipeline, ChangeKind::GradPrecision,
                                 ChangeKind::ActivationOffload};

// Per pair of kinds, the least combination that fits: the steps i of `a` and j of `b` with the
// smallest i + j (then the smaller i) whose memory walk fits, kept when its simulation confirms.
std::vector<FittingChange> pairs_that_fit(const Scenario& s, const FitContext& context) {
    std::vector<FittingChange> out;
    for (std::size_t x = 0; x < std::size(kKinds); ++x)
        for (std::size_t y = x + 1; y < std::size(kKinds); ++y) {
            std::vector<Sets> a = steps_of(kKinds[x], s), b = steps_of(kKinds[y], s);
            a.resize(std::min(a.size(), kPairSteps));
            b.resize(std::min(b.size(), kPairSteps));
            bool found = false;
            for (std::size_t sum = 0; !found && sum + 2 <= a.size() + b.size(); ++sum)
                for (std::size_t i = 0; !found && i <= sum && i < a.size(); ++i) {
                    const std::size_t j = sum - i;
                    if (j >= b.size()) continue;
                    Sets both = a[i];
                    both.insert(both.end(), b[j].begin(), b[j].end());
                    if (!memory_fits(s, both, context)) continue;
                    found = true;  // the least combination of the pair: simulated, kept if it confirms
                    if (const std::optional<RunResult> r = run_if_fits(s, both, context))
                        out.push_back({{kKinds[x], kKinds[y]}, both, r->peak_memory_bytes, r->iteration_time_s});
                }
        }
    return out;
}

}  // namespace

std::vector<FittingChange> fitting_changes(const Scenario& s, const FitContext& context) {
    std::vector<FittingChange> out;
    for (const ChangeKind kind : kKinds) {
        for (const Sets& sets : steps_of(kind, s)) {
            const std::optional<RunResult> r = run_if_fits(s, sets, context);
            if (!r) continue;
            out.push_back({{kind}, sets, r->peak_memory_bytes, r->iteration_time_s});
            break;
        }
    }
    if (out.empty()) out = pairs_that_fit(s, context);
    std::stable_sort(out.begin(), out.end(), [](const FittingChange& a, const FittingChange& b) {
        return a.iteration_time_s < b.iteration_time_s;
    });
    return out;
}

}  // namespace cuboid::cli
