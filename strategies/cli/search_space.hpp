// The plan space of `cuboid search`: the values each plan dimension may take (the scenario's
// `search:` section, or defaults from the model and cluster), and its candidates as sweep points
// over fixed axes, so that a search runs, ranks and writes its plans with the sweep's machinery.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strategies/cli/sweep_points.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

struct SearchSpace {
    std::vector<int> tensor;
    std::vector<int> pipeline;
    std::vector<int> micro_batch;
    std::vector<std::string> schedule;      // names of `cuboid list schedules`
    std::vector<int> virtual_stages;        // schedules of several chunks per stage (interleaved); the others run their own count
    std::vector<std::string> recompute;
    std::vector<std::string> tensor_mode;
    std::vector<int> overlap_chunks;
    std::vector<bool> sequence_parallel;
    std::vector<int> zero_stage;
    std::vector<int> context;               // context-parallel degrees
    std::vector<std::string> context_mode;  // names of `cuboid list context-modes` (context > 1 only)
    // Mixture-of-experts models only (model.experts): expert and expert-tensor degrees; a value
    // that does not divide the experts (or whose product does not divide t*c*d) is skipped.
    std::vector<int> expert;
    std::vector<int> expert_tensor;
    // ZeRO-3 plans only: the data x context ranks one copy of the state is sharded over
    // (parallel.shard_group, hybrid sharding), 0 for all of them (full sharding). A value that
    // does not divide a candidate's data x context ranks, is not below them or is not a multiple
    // of its context degree is skipped for that candidate.
    std::vector<int> shard_group;
    std::optional<int> max_gpus;            // search on at most this many GPUs of the cluster

    // Some ZeRO-3 plan may be hybrid-sharded: the search then has a parallel.shard_group axis.
    bool hybrid_sharding() const;
};

// Every value of every dimension: powers of two for tensor (up to a node) and pipeline (up to
// the layers), micro-batch 1-8, every schedule (interleaved with 2 and 4 chunks), every recompute
// policy and tensor mode, overlap 1 and 2 chunks, sequence parallelism off and on, ZeRO 0-3,
// context parallelism 1, 2, 4, 8 in every mode; for a mixture of experts, expert degrees of the
// powers of two up to the experts and the GPUs, expert tensor 1, 2, 4, 8; ZeRO-3 fully sharded
// and hybrid-sharded over shard groups of 2, 4, ... up to the GPUs of one NVLink domain (HSDP's
// usual groups, whose gathers stay on NVLink).
// Values that the plan validation rejects for a model or cluster are skipped when searched.
SearchSpace full_search_space(const Scenario& base);

// The space searched when the scenario has no `search:` section, and the value of each key a
// `search:` section leaves out: the plans a Megatron-LM user tries first (docs/search.md).
// Tensor and pipeline as in the full space; micro-batch 1, 2, 4; 1F1B and interleaved (2 and 4
// chunks); selective and full recompute; 1-D tensor parallelism with sequence parallelism and
// no chunked overlap; ZeRO 0 and 1 (the distributed optimizer); context parallelism (ring) of
// 1, 2, 4 and 8 for sequences of 16k tokens or more, else none; for a mixture of experts every
// expert degree of the full space with expert tensor 1 (Megatron-Core's default); ZeRO-3 (when
// listed) fully sharded. A few hundred candidates at any
// cluster size, where the full space has tens of thousands.
SearchSpace default_search_space(const Scenario& base);

// The parallel degrees a search chooses are axes of the layout's rank grids (strategies/layout.hpp):
// a view of the ranks (Layout::grid for the cluster's GPUs, Layout::expert_grid for one stage's
// tensor x context x data ranks) names the axes a candidate sets, in the order the search
// enumerates them (the first varies slowest), and the one axis that takes what remains of the
// view's ranks. Every axis of the view's grid is one or the other (a test holds them to
// Layout's grids), so an axis added to a grid must be given its search values here.
struct DegreeAxis {
    std::string_view axis;                  // the grid's axis name (cuboid::axis)
    std::vector<int> SearchSpace::*values;  // its values in the space (the search section's key of that name)
    // Model and batch rules beyond dividing the view's ranks: false skips the value.
    bool (*fits)(int degree, const Scenario& base);
};
struct DegreeView {
    std::vector<DegreeAxis> chosen;
    std::string_view remainder;  // the axis whose degree is the view's ranks / the chosen degrees
    bool (*remainder_fits)(int degree, const Scenario& base);
};
const DegreeView& plan_degrees();    // tensor, pipeline, context; data takes the rest of the GPUs
const DegreeView& expert_degrees();  // expert, expert_tensor; expert_data takes the rest of a stage

// The degrees of one view's candidate: the chosen axes' values and the remainder's, by axis name.
struct DegreeChoice {
    std::vector<std::pair<std::string_view, int>> degrees;
    int at(std::string_view axis) const;  // std::logic_error for an axis the view does not have
};
// Every choice of a view over `ranks` ranks whose chosen degrees divide them and fit their rules,
// in enumeration order.
std::vector<DegreeChoice> degree_choices(const DegreeView& view, const SearchSpace& space, const Scenario& base,
                                         std::int64_t ranks);

// The fixed axes of a search: the plan keys it sets, in this order; parallel.expert and
// parallel.expert_tensor, for a mixture-of-experts model only (`experts`); parallel.shard_group
// last, when some ZeRO-3 plan may be hybrid-sharded (`shard_groups`, SearchSpace::hybrid_sharding).
SweepAxes search_axes(bool experts = false, bool shard_groups = false);

// The candidates: every combination whose degrees multiply to the cluster's GPUs and whose
// micro-batch divides the batch of one data-parallel replica. Settings that only mean something
// with tensor parallelism (sequence parallelism, tensor modes, overlap chunks) are varied only
// when tensor > 1. Points follow search_axes(); the axes' value lists are filled from them.
struct SearchCandidates {
    SweepAxes axes;
    std::vector<SweepPoint> points;
};
SearchCandidates search_candidates(const SearchSpace& space, const Scenario& base);

// The scenario with its cluster cut to max_gpus (whole nodes), when the space sets it.
Scenario limited_to_max_gpus(Scenario base, const SearchSpace& space);

}  // namespace cuboid::cli
