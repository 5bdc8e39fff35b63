#include "strategies/program_builder.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "sim/memory.hpp"
#include "sim/parallel_for.hpp"
#include "strategies/model_math.hpp"
#include "strategies/program_groups.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/schedule_kinds.hpp"
#include "strategies/stage_builder.hpp"
#include "strategies/training_state.hpp"

namespace cuboid {
namespace {

LayerDims dims_of(const Scenario& sc, const Layout& l) {
    LayerDims d = LayerDims::make(sc.model, sc.training.micro_batch, sc.parallel.tensor, sc.parallel.sequence_parallel,
                                  sc.training.precision);
    d.set_mesh(tensor_mesh_of(sc, l));  // 2d / 3d / atp layer programs
    d.set_context(l.context, l.context_mode);
    d.set_experts(sc.model, l.expert, l.expert_tensor);
    d.set_recompute_modules(sc.parallel.recompute_modules);
    return d;
}

// One activation message of b*s*h elements, split over the tensor ranks (scatter/gather).
double message_bytes(const LayerDims& d) {
    return d.act_bytes * static_cast<double>(d.tokens() * d.h) / static_cast<double>(d.t);
}

// Ops of one layer's forward and backward (with recomputation), counted on a scratch list.
std::size_t ops_per_layer(const LayerContext& layer) {
    sim::OpList scratch;
    OpEmitter e(scratch, sim::Precision::Bf16);
    emit_layer_forward(e, layer);
    emit_layer_backward(e, layer);
    return scratch.ops.size();
}

// Pipeline buffers: one incoming activation and one incoming gradient message, gathered.
double pipeline_buffer_bytes(const Layout& l, const LayerDims& d) {
    return l.pipeline > 1 ? 2.0 * message_bytes(d) * l.tensor : 0.0;
}

// ZeRO-3's working buffers of one stage (bytes): the gathered weights of two units (the one
// computing and the one prefetched) and the unsharded gradient of one unit before its
// reduce-scatter, sized by the stage's largest unit (a layer, the embedding, the head). An expert
// layer's unit holds the parts that are sharded: its dense weights (over the shard group) and
// its routed experts (over the expert-data group).
struct GatherBuffers {
    double weights = 0.0, grads = 0.0;
};
GatherBuffers gather_buffers(const Scenario& sc, const Layout& l, int stage) {
    const bool dense = fully_sharded(sc.parallel.zero_stage, l);
    const bool experts = experts_fully_sharded(sc.parallel.zero_stage, l);
    if (!dense && !experts) return {};
    const ModelSpec& m = sc.model;
    double unit = m.moe() ? 0.0 : layer_parameter_count_per_rank(m, l.tensor);
    for (int chunk = 0; chunk < l.virtual_stages && m.moe(); ++chunk)
        for (int i = 0; i < l.layers_of(stage, chunk); ++i) {
            const LayerParameters p = layer_parameters(m, l.first_layer_of(stage, chunk) + i, l.tensor, l.expert, l.expert_tensor);
            unit = std::max(unit, (dense ? p.dense : 0.0) + (experts ? p.expert : 0.0));
        }
    if (dense && stage == 0) unit = std::max(unit, embedding_parameters_per_rank(m, l.tensor));
    if (dense && stage == l.head_stage()) unit = std::max(unit, head_parameters_per_rank(m, l.tensor, l.tied_pipeline()));
    const StateBytesPerParam state = state_bytes_per_param(sc.training);
    return {2.0 * unit * state.weight, unit * state.grad};
}

// Bytes a stage's ranks hold all iteration besides activations (stage_resident_bytes), with the
// layer's dimensions `d` (dims_of(sc, l)) already worked out.
Bytes resident_bytes(const Scenario& sc, const Layout& l, int stage, const LayerDims& d) {
    const StageParameters params = stage_parameter_split(sc.model, l, stage);
    Bytes b = resident_state_bytes(params, l, sc.training, sc.parallel.zero_stage, l.shard_size());
    if (l.pipeline > 1) b += Bytes(pipeline_buffer_bytes(l, d));
    const GatherBuffers g = gather_buffers(sc, l, stage);
    if (g.weights > 0.0) b += Bytes(g.weights + g.grads);
    return b;
}

// `ops_per_layer`: ops_per_layer(layer), the same for every stage.
StagePlan stage_plan(const Scenario& sc, const Layout& l, const LayerContext& layer, int stage, int checkpointed,
                     std::size_t ops_per_layer) {
    const ModelSpec& m = sc.model;
    const StateBytesPerParam state = state_bytes_per_param(sc.training);
    StagePlan p;
    p.layout = &l;
    p.stage = stage;
    p.schedule = sc.parallel.schedule;
    p.layer = layer;
    p.checkpointed_layers = checkpointed;
    p.scp_whole_stage_recompute = sc.parallel.scp_whole_stage_recompute;
    p.ops_per_layer = ops_per_layer;
    p.precision = sc.training.precision;
    p.message_bytes = message_bytes(layer.dims);
    p.gather_after_recv = layer.dims.t > 1 && !layer.dims.sp;
    p.dp_overlap = sc.parallel.dp_overlap;
    p.zero_stage = sc.parallel.zero_stage;
    p.layer_params = layer_parameter_count_per_rank(m, l.tensor);
    if (m.moe()) {
        // The last layer is an expert layer (validate_plan leaves at least one after dense_layers).
        const LayerParameters moe = layer_parameters(m, m.layers - 1, l.tensor, l.expert, l.expert_tensor);
        p.dense_layers = m.dense_layers;
        p.dense_layer_params = p.layer_params;
        p.layer_params = moe.dense;
        p.expert_params = moe.expert;
        p.dense_layer = layer;
        p.dense_layer.dims = layer.dims.dense();
        p.dense_layer.gemms = layer_gemms(p.dense_layer.dims);
        p.dense_layer.memory = layer_memory(p.dense_layer.dims, layer.recompute);
    }
    p.embedding_params = stage == 0 ? embedding_parameters_per_rank(m, l.tensor) : 0.0;
    p.head_params = stage == l.head_stage() ? head_parameters_per_rank(m, l.tensor, l.tied_pipeline()) : 0.0;
    if (stage == l.head_stage() && m.mtp_layers > 0) {
        p.mtp_layers = m.mtp_layers;
        p.last_layer = m.layers - 1;
        p.mtp_expert_params = mtp_parameters(m, l.tensor, l.expert, l.expert_tensor).expert;
    }
    const bool ends = stage == 0 || stage == l.head_stage();
    p.tied_embedding_params = ends ? tied_embedding_copy_per_rank(m, l.tensor, l.tied_pipeline()) : 0.0;
    p.grad_bytes_per_param = state.grad;
    p.weight_bytes_per_param = state.weight;
    p.optimizer_bytes_per_param = optimizer_step_bytes_per_param(sc.training);
    p.optimizer_offload = sc.training.optimizer_offload;
    p.activation_offload_layers = sc.training.activation_offload_layers;
    p.bucket_params = gradient_bucket_params(l.data);
    p.resident = resident_bytes(sc, l, stage, layer.dims);
    return p;
}

LayerContext base_layer(const Scenario& sc, const Layout& l, const Labels& labels) {
    LayerContext layer = LayerContext::make(dims_of(sc, l), sc.parallel.recompute, labels);
    layer.tp_backward_overlap = sc.parallel.tp_backward_overlap;
    layer.overlap_chunks = sc.parallel.overlap_chunks;
    return layer;
}

// Peak memory of one stage's program with `k` checkpointed layers.
double stage_peak(const Scenario& sc, const Layout& l, int stage, int k) {
    sim::Program scratch;
    const Labels labels = intern_labels(scratch);
    const LayerContext layer = base_layer(sc, l, labels);
    sim::OpList list;
    build_stage(list, stage_plan(sc, l, layer, stage, k, ops_per_layer(layer)));
    return sim::peak_memory(list).peak.value;
}

// Smallest k in [0, layers] whose stage peak fits (the peak does not grow with k: a checkpointed
// layer keeps only its input until its backward); `layers` when none fits.
int fewest_fitting(const Scenario& sc, const Layout& l, int stage, double capacity) {
    int lo = 0, hi = l.layers_on_stage(stage);
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (stage_peak(sc, l, stage, mid) <= capacity) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

}  // namespace

std::vector<int> checkpointed_layers(const Scenario& sc, const Layout& l, const BuildOptions& options) {
    const Recompute r = sc.parallel.recompute;
    const bool scp = schedule_kind(sc.parallel.schedule).pre_recompute;
    std::vector<int> k(static_cast<std::size_t>(l.pipeline), 0);
    for (int s = 0; s < l.pipeline; ++s) {
        if (scp && s == l.pipeline - 1) continue;  // SCP's last stage never recomputes
        if (r == Recompute::Full) k[static_cast<std::size_t>(s)] = l.layers_on_stage(s);
        if (r == Recompute::StageAware && std::isfinite(options.memory_capacity.value))
            k[static_cast<std::size_t>(s)] = fewest_fitting(sc, l, s, options.memory_capacity.value);
    }
    return k;
}

Bytes stage_resident_bytes(const Scenario& sc, const Layout& l, int stage) {
    return resident_bytes(sc, l, stage, dims_of(sc, l));
}

ResidentMemory stage_resident_memory(const Scenario& sc, const Layout& l, int stage) {
    const StageParameters params = stage_parameter_split(sc.model, l, stage);
    const StateBytesPerParam per_param =
        sharded_state_bytes_per_param(sc.training, sc.parallel.zero_stage, l.shard_size());
    const StateBytesPerParam per_expert_param =
        sharded_state_bytes_per_param(sc.training, sc.parallel.zero_stage, l.expert_shard_size());
    const GatherBuffers g = gather_buffers(sc, l, stage);
    ResidentMemory r;
    r.weights_bytes = params.dense * per_param.weight + params.expert * per_expert_param.weight + g.weights;
    r.gradients_bytes = params.dense * per_param.grad + params.expert * per_expert_param.grad + g.grads;
    r.optimizer_state_bytes = params.dense * per_param.optimizer + params.expert * per_expert_param.optimizer;
    r.pipeline_buffers_bytes = pipeline_buffer_bytes(l, dims_of(sc, l));
    return r;
}

sim::Program build_program(const Scenario& sc, const Layout& l, const BuildOptions& options) {
    return build_program_checkpointing(sc, l, checkpointed_layers(sc, l, options));
}

namespace {

// `tags` (optional) receives one tag per op of each stage's OpList; `threads` as in
// build_program_checkpointing.
sim::Program build_stages(const Scenario& sc, const Layout& l, const std::vector<int>& checkpointed, ProgramTags* tags,
                          int threads) {
    sim::Program program;
    name_streams_and_classes(program);
    const Labels labels = intern_labels(program);
    // The embedding's copy on the last stage (GPT's tied output matrix, or multi-token prediction's
    // lookups) all-reduces its gradient with the first stage's.
    build_groups(program, l, labels, !sc.model.swiglu || sc.model.mtp_layers > 0, fully_sharded(sc.parallel.zero_stage, l),
                 experts_fully_sharded(sc.parallel.zero_stage, l));
    const LayerContext layer = base_layer(sc, l, labels);
    const std::size_t layer_ops = ops_per_layer(layer);
    program.op_lists.resize(static_cast<std::size_t>(l.pipeline));
    if (tags != nullptr) tags->assign(static_cast<std::size_t>(l.pipeline), {});
    // Stages are independent (each writes only its own OpList), so they are built in parallel;
    // the result does not depend on the thread count.
    const auto build = [&](std::size_t s) {
        StagePlan plan = stage_plan(sc, l, layer, static_cast<int>(s), checkpointed[s], layer_ops);
        if (tags != nullptr) plan.tags = &(*tags)[s];
        build_stage(program.op_lists[s], plan);
    };
    const int cores = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    sim::parallel_for(static_cast<std::size_t>(l.pipeline), cores, build);
    return program;
}

}  // namespace

sim::Program build_program_checkpointing(const Scenario& sc, const Layout& l, const std::vector<int>& checkpointed,
                                         int threads) {
    return build_stages(sc, l, checkpointed, nullptr, threads);
}

TaggedProgram build_tagged_program(const Scenario& sc, const Layout& l, const BuildOptions& options) {
    TaggedProgram out;
    out.program = build_stages(sc, l, checkpointed_layers(sc, l, options), &out.tags, 0);
    return out;
}

double program_gemm_flops(const sim::Program& program, std::span<const sim::OpListTotals> totals) {
    std::vector<double> ranks_per_list(program.op_lists.size(), 0.0);
    for (const auto& r : program.ranks) ranks_per_list[r.op_list] += 1.0;
    double total = 0.0;
    for (std::size_t i = 0; i < program.op_lists.size(); ++i) total += totals[i].gemm_flops.value * ranks_per_list[i];
    return total;
}

double program_gemm_flops(const sim::Program& program) {
    std::vector<sim::OpListTotals> totals;
    for (const auto& list : program.op_lists) totals.push_back(sim::op_list_totals(list));
    return program_gemm_flops(program, totals);
}

}  // namespace cuboid
