// For a plan that does not fit in GPU memory: the smallest single changes with which it would,
// each found by running the changed plan, never estimated. Per kind of change, the least of it
// that fits:
//   sequence parallelism  on (with tensor parallelism, when off): LayerNorm and dropout
//                         activations split over the tensor group;
//   recomputation         the first of selective, (latent attention) selective with the
//                         up-projections (mla_up_proj), stage-aware, full beyond the plan's own;
//   micro-batch           the largest smaller one;
//   ZeRO stage            the first higher one the plan validation accepts;
//   pipeline degree       the first larger one with the same GPUs (data parallelism shrinks);
//   bf16 gradients        (bf16 or fp8 training with the default fp32 gradients): 2 bytes per
//                         parameter less, before ZeRO 2 shards them;
//   activation offloading (no pipeline, no recomputation): the first number of layers, in
//                         eighths of all but the last layer, beyond the plan's own.
// A change is kept only when the plan validation accepts the changed plan, its program's memory
// walk (check_memory) fits, and its simulation (run_scenario) confirms the fit; it is shown
// with the simulated iteration time, fastest first.
//
// When no single change fits, pairs of changes of two kinds are tried: per pair of kinds, the
// combination of the least of each (the first kPairSteps steps of each kind, the smallest sum of
// steps first) whose memory walk fits, confirmed by its simulation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/cli/scenario_keys.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

enum class ChangeKind { SequenceParallel, Recompute, MicroBatch, ZeroStage, Pipeline, GradPrecision, ActivationOffload };

// "sequence_parallel", "recompute", "micro_batch", "zero_stage", "pipeline", "grad_precision",
// "activation_offload"
std::string change_kind_name(ChangeKind k);
// The kinds' names joined by "+" ("recompute+zero_stage").
std::string change_kinds_name(const std::vector<ChangeKind>& kinds);

// Steps of each kind a pair of changes tries (the least of each kind first).
inline constexpr std::size_t kPairSteps = 4;

struct FittingChange {
    std::vector<ChangeKind> kinds;  // one kind, or two when no single change fits
    std::vector<std::string> sets;  // KEY=VALUE, as `--set` takes them
    double peak_memory_bytes = 0.0; // the changed plan's simulated peak
    double iteration_time_s = 0.0;  // the changed plan's simulated iteration
};

struct FitContext {
    const NameResolvers* names = nullptr;
    const hw::Catalog* builtin = nullptr;
    std::shared_ptr<const hw::Hardware> hardware;  // the scenario's cluster
    double memory_headroom = 0.0;                  // as the run that did not fit
};

// The changes, fastest first (ties: the order of ChangeKind). `s`: the scenario as it ran (with
// its --set overrides applied and its work limits). A changed plan that the key checks, the plan
// validation or the work limits reject (InputError) is skipped.
std::vector<FittingChange> fitting_changes(const Scenario& s, const FitContext& context);

}  // namespace cuboid::cli
