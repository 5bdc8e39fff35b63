#include "strategies/partition/stage_partition.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "hardware_models/catalog.hpp"
#include "strategies/edge_ops.hpp"
#include "strategies/labels.hpp"
#include "strategies/model_math.hpp"
#include "strategies/schedule_kinds.hpp"
#include "strategies/training_state.hpp"

namespace cuboid {
namespace {

using std::to_string;

// Seconds per op on the roofline (FLOPs at peak, bytes at HBM bandwidth); FLOPs when unknown.
struct Roofline {
    double flops_per_s = 1.0;
    double bytes_per_s = 0.0;  // 0: bytes cost nothing

    double time(const sim::Op& op) const {
        const double compute = sim::is_matmul(op.kind) ? op.flops.value / flops_per_s : 0.0;
        if (bytes_per_s <= 0.0 || sim::is_communication(op.kind)) return compute;
        return std::max(compute, op.bytes.value / bytes_per_s);
    }
};

struct GpuFigures {
    Roofline roofline;
    double capacity = std::numeric_limits<double>::infinity();
};

GpuFigures gpu_figures(const Scenario& sc, const hw::Catalog& catalog) {
    GpuFigures g;
    try {
        const hw::GpuSpec& gpu = catalog.gpu(sc.cluster.gpu);
        g.roofline = {gpu.peak(sc.training.precision).value, gpu.memory_bandwidth.value};
        g.capacity = gpu.memory_capacity.value;
    } catch (const InputError&) {
        // A GPU outside the built-in catalog: balance GEMM FLOPs, no memory limit.
    }
    return g;
}

// Roofline time of the ops `emit` appends, and the activation bytes they leave allocated.
struct Emitted {
    double time = 0.0;
    double kept = 0.0;
};

template <class Emit>
Emitted emitted(const LayerContext& c, const Roofline& r, Emit emit) {
    sim::OpList list;
    OpEmitter e(list, sim::Precision::Bf16);
    emit(e, c);
    Emitted out;
    for (const sim::Op& op : list.ops) {
        out.time += r.time(op);
        out.kept += op.memory_alloc.value - op.memory_free.value;
    }
    return out;
}

Emitted forward_only(const LayerContext& c, const Roofline& r) {
    return emitted(c, r, [](OpEmitter& e, const LayerContext& x) { emit_layer_forward(e, x); });
}

NodeCost layer_cost(const Scenario& sc, const Layout& l, const LayerContext& base, const Roofline& r) {
    // none / selective keep what the policy stores; full and stage-aware are priced per layer
    // both ways (plain, and checkpointed: + recompute_time, stash_ckpt_bytes), and the chunk's
    // RecomputeRule says how many of its layers take the checkpointed cost.
    const bool checkpointing = sc.parallel.recompute == Recompute::Full || sc.parallel.recompute == Recompute::StageAware;
    const LayerContext plain = checkpointing ? base.with_policy(Recompute::None) : base;
    const auto both = [](OpEmitter& e, const LayerContext& x) {
        emit_layer_forward(e, x);
        emit_layer_backward(e, x);
    };
    NodeCost n;
    n.time = emitted(plain, r, both).time;
    n.recompute_time = forward_only(plain, r).time;
    n.stash_bytes = forward_only(plain, r).kept;
    n.stash_ckpt_bytes = forward_only(base.with_policy(Recompute::Full), r).kept;
    n.static_bytes = resident_state_bytes(layer_parameter_count_per_rank(sc.model, l.tensor), sc.training,
                                          sc.parallel.zero_stage, l.data).value;
    if (sc.model.moe()) {  // every layer priced as an expert layer (the dense ones are lighter)
        const LayerParameters moe = layer_parameters(sc.model, sc.model.layers - 1, l.tensor, l.expert, l.expert_tensor);
        n.static_bytes = resident_state_bytes(StageParameters{moe.dense, moe.expert}, l, sc.training,
                                              sc.parallel.zero_stage, l.data)
                             .value;
    }
    return n;
}

NodeCost end_cost(const Scenario& sc, const Layout& l, const LayerContext& c, const Roofline& r, bool head) {
    const auto fwd = [head](OpEmitter& e, const LayerContext& x) {
        head ? emit_head_forward(e, x) : emit_embedding_forward(e, x);
    };
    const auto both = [head](OpEmitter& e, const LayerContext& x) {
        head ? emit_head_forward(e, x) : emit_embedding_forward(e, x);
        head ? emit_head_backward(e, x) : emit_embedding_backward(e, x);
    };
    const double params = head ? head_parameters_per_rank(sc.model, l.tensor, l.tied_pipeline())
                               : embedding_parameters_per_rank(sc.model, l.tensor);
    NodeCost n;
    n.time = emitted(c, r, both).time;
    n.stash_bytes = emitted(c, r, fwd).kept;
    n.static_bytes = resident_state_bytes(params, sc.training, sc.parallel.zero_stage, l.data).value;
    return n;
}

// Micro-batches a stage holds at its peak: the schedule's row (schedule_kinds.hpp).
double in_flight(const Scenario& sc, const Layout& l, int stage) {
    return schedule_kind(sc.parallel.schedule).in_flight(l.pipeline, l.micro_batches, l.virtual_stages, stage);
}

void check_override(const Scenario& sc, const Layout& l) {
    const std::vector<int>& given = sc.parallel.stage_layers;
    const auto fail = [&](const std::string& why) { throw InputError(sc.where("parallel.stage_layers"), why); };
    const int chunks = l.pipeline * l.virtual_stages;
    if (static_cast<int>(given.size()) != chunks)
        fail("needs one entry per model chunk (pipeline * virtual_stages = " + to_string(chunks) + "), got " +
             to_string(given.size()));
    // Every chunk runs at least one layer: the stage program sends a chunk's output after its
    // last layer and reports its recompute fraction per layer.
    for (std::size_t i = 0; i < given.size(); ++i)
        if (given[i] < 1) fail("entry " + to_string(i) + " is " + to_string(given[i]) + "; every chunk needs at least 1 layer");
    const int total = std::accumulate(given.begin(), given.end(), 0);
    if (total != sc.model.layers)
        fail("the entries sum to " + to_string(total) + " but the model has " + to_string(sc.model.layers) + " layers");
}

}  // namespace

PartitionProblem partition_problem(const Scenario& sc, const Layout& l) {
    return partition_problem(sc, l, hw::Catalog::load_builtin());
}

PartitionProblem partition_problem(const Scenario& sc, const Layout& l, const hw::Catalog& builtin) {
    const GpuFigures gpu = gpu_figures(sc, builtin);
    sim::Program scratch;
    const Labels labels = intern_labels(scratch);
    LayerDims dims =
        LayerDims::make(sc.model, sc.training.micro_batch, l.tensor, sc.parallel.sequence_parallel, sc.training.precision);
    dims.set_context(l.context, l.context_mode);
    dims.set_experts(sc.model, l.expert, l.expert_tensor);
    dims.set_recompute_modules(sc.parallel.recompute_modules);
    LayerContext base = LayerContext::make(dims, sc.parallel.recompute, labels);
    base.tp_backward_overlap = sc.parallel.tp_backward_overlap;
    base.overlap_chunks = sc.parallel.overlap_chunks;

    PartitionProblem pr;
    pr.layers = sc.model.layers;
    pr.layer = layer_cost(sc, l, base, gpu.roofline);
    pr.embedding = end_cost(sc, l, base, gpu.roofline, false);
    pr.head = end_cost(sc, l, base, gpu.roofline, true);
    pr.capacity = gpu.capacity;
    const Recompute r = sc.parallel.recompute;
    const bool checkpointing = r == Recompute::Full || r == Recompute::StageAware;
    const int chunks = l.pipeline * l.virtual_stages;
    for (int j = 0; j < chunks; ++j) {
        const int stage = l.stage_of_chunk(j);
        pr.in_flight.push_back(in_flight(sc, l, stage));
        // SCP's last stage never recomputes (Merak's rule). Stage-aware checkpoints, per
        // candidate chunk, the fewest layers that fit: pricing it as full recompute would load
        // the later stages with layers that then run without recompute (the critical stage).
        const bool scp_last = schedule_kind(sc.parallel.schedule).pre_recompute && stage == l.pipeline - 1;
        RecomputeRule rule = RecomputeRule::Never;
        if (checkpointing && !scp_last)
            rule = r == Recompute::StageAware ? RecomputeRule::WhereMemoryNeeds : RecomputeRule::Always;
        pr.recompute.push_back(rule);
    }
    return pr;
}

std::vector<int> stage_partition(const Scenario& sc, const Layout& l) { return stage_partition(sc, l, nullptr); }

std::vector<int> stage_partition(const Scenario& sc, const Layout& l, const hw::Catalog* builtin) {
    const int chunks = l.pipeline * l.virtual_stages;
    if (!sc.parallel.stage_layers.empty()) {
        check_override(sc, l);
        return sc.parallel.stage_layers;
    }
    if (sc.parallel.partition == PartitionMethod::Uniform || chunks == 1) return balanced_split(sc.model.layers, chunks);
    return partition_layers(builtin ? partition_problem(sc, l, *builtin) : partition_problem(sc, l));
}

}  // namespace cuboid
