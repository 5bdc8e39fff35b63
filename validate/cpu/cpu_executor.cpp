#include "validate/cpu/cpu_executor.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <thread>

#include "strategies/tensor_modes/mode_shapes.hpp"
#include "strategies/training_state.hpp"
#include "strategies/tensor_modes/tensor_mesh.hpp"
#include "validate/cpu/atp_split.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

// Gradient element from the data-parallel replica that owns it (all own everything without ZeRO).
Mat merge_owned(const std::vector<const Mat*>& grads, const std::vector<const Mat*>& owned) {
    Mat out = *grads.front();
    for (Eigen::Index i = 0; i < out.size(); ++i)
        for (std::size_t r = 0; r < grads.size(); ++r)
            if (owned[r]->data()[i] > 0.5) {
                out.data()[i] = grads[r]->data()[i];
                break;
            }
    return out;
}

std::vector<const Mat*> collect(const GptParams& p) {
    std::vector<const Mat*> out;
    for_each_param(p, [&](const ParamRef&, const Mat& m) { out.push_back(&m); });
    return out;
}

// Whole-model gradients and weights from every rank's shards. `sharded_weights` (ZeRO-3): each
// weight element from the replica that owns it; else replica 0's (after ZeRO-1/2's gather every
// replica holds all of them, and reading one replica shows a missing gather).
void assemble(const Layout& l, const GptDims& d, int atp_column_axis, bool summa, bool cube, bool sharded_weights,
              const std::vector<RankOutcome>& ranks, Execution& ex) {
    const bool mesh_split = atp_column_axis >= 0 || summa || cube;
    std::vector<Mat*> grads, weights;
    for_each_param(ex.grads, [&](const ParamRef&, Mat& m) { grads.push_back(&m); });
    for_each_param(ex.weights, [&](const ParamRef&, Mat& m) { weights.push_back(&m); });
    std::vector<ParamRef> refs;
    for_each_param(ex.grads, [&](const ParamRef& r, Mat&) { refs.push_back(r); });
    for (int s = 0; s < l.pipeline; ++s)
        for (int tp = 0; tp < l.tensor; ++tp) {
            std::vector<std::vector<const Mat*>> g, o, w;
            for (int dp = 0; dp < l.data; ++dp) {
                const RankOutcome& r = ranks[l.rank(tp, dp, s)];
                g.push_back(collect(r.grads));
                o.push_back(collect(r.owned));
                w.push_back(collect(r.weights));
            }
            for (std::size_t i = 0; i < refs.size(); ++i) {
                if (w[0][i]->size() == 0) continue;  // not held by this stage
                if (is_expert(refs[i].split)) continue;  // assemble_experts
                const bool atp = mesh_split && refs[i].block >= 0;
                // 2d/3d: the final LayerNorm runs on hidden blocks; each device holds its block's gradient.
                const bool norm_block = (summa || cube) && refs[i].block == kHeadBlock && refs[i].split == Split::Replicated;
                if (refs[i].split == Split::Replicated && tp > 0 && !atp && !norm_block) continue;
                std::vector<const Mat*> gi, oi, wi;
                for (int dp = 0; dp < l.data; ++dp) {
                    gi.push_back(g[static_cast<std::size_t>(dp)][i]);
                    oi.push_back(o[static_cast<std::size_t>(dp)][i]);
                    wi.push_back(w[static_cast<std::size_t>(dp)][i]);
                }
                const Mat weight = sharded_weights ? merge_owned(wi, oi) : *w[0][i];
                if (norm_block) {
                    const int col = l.mesh_coord(tp, summa ? 0 : 2);
                    const Eigen::Index n = d.hidden / l.tensor_mesh[0], c0 = n * col;
                    grads[i]->middleCols(c0, n) = merge_owned(gi, oi).middleCols(c0, n);
                    weights[i]->middleCols(c0, n) = weight.middleCols(c0, n);
                    continue;
                }
                if (atp && cube) {
                    const CubeCoord m{l.mesh_coord(tp, 0), l.mesh_coord(tp, 1), l.mesh_coord(tp, 2), l.tensor_mesh[0]};
                    cube_place(refs[i], *grads[i], merge_owned(gi, oi), d, m);
                    cube_place(refs[i], *weights[i], weight, d, m);
                    continue;
                }
                if (atp) {  // blocks held by several devices are placed by each (they are equal)
                    const auto a = static_cast<std::size_t>(summa ? 0 : atp_column_axis);
                    const AtpCoord m{l.mesh_coord(tp, static_cast<int>(a)), l.tensor_mesh[a],
                                     l.mesh_coord(tp, static_cast<int>(1 - a)), l.tensor_mesh[1 - a], summa};
                    atp_place(refs[i], *grads[i], merge_owned(gi, oi), d, m);
                    atp_place(refs[i], *weights[i], weight, d, m);
                    continue;
                }
                place_shard(*grads[i], merge_owned(gi, oi), refs[i].split, d, tp, l.tensor);
                place_shard(*weights[i], weight, refs[i].split, d, tp, l.tensor);
            }
        }
    for (std::size_t i = 0; i < ranks.size(); ++i)
        if (l.stage_of(static_cast<std::uint32_t>(i)) == l.head_stage() && l.tp_of(static_cast<std::uint32_t>(i)) == 0)
            ex.loss += ranks[i].loss;
    for (const RankOutcome& r : ranks) ex.recompute_diff = std::max(ex.recompute_diff, r.recompute_diff);
}

// The routed experts' shards: stage rank q = tp + t * dp holds part a of experts e of the expert
// layers' q = a + etp * (e + ep * f) (strategies/program_groups.cpp); the f members of its
// expert-data group hold the same shard (each element from its ZeRO owner). FC2's bias is whole
// on each expert-tensor member: member 0's is placed. `sharded_weights` (ZeRO-3 of the experts):
// each weight element from the member that owns it, as for the gradients.
void assemble_experts(const Layout& l, const GptDims& d, bool sharded_weights, const std::vector<RankOutcome>& ranks,
                      Execution& ex) {
    if (d.experts == 0) return;
    std::vector<Mat*> grads, weights;
    std::vector<ParamRef> refs;
    for_each_param(ex.grads, [&](const ParamRef& r, Mat& m) {
        refs.push_back(r);
        grads.push_back(&m);
    });
    for_each_param(ex.weights, [&](const ParamRef&, Mat& m) { weights.push_back(&m); });
    const int etp = l.expert_tensor, ep = l.expert, per_stage = l.tensor * l.data, edp = per_stage / (etp * ep);
    for (int s = 0; s < l.pipeline; ++s)
        for (int q = 0; q < etp * ep; ++q) {  // the expert-data index f = 0 of each (a, e)
            const ExpertCoord coord{q / etp, ep, q % etp, etp};
            std::vector<std::vector<const Mat*>> g, o, w;
            for (int f = 0; f < edp; ++f) {
                const int member = q + etp * ep * f;
                const RankOutcome& r = ranks[l.rank(member % l.tensor, member / l.tensor, s)];
                g.push_back(collect(r.grads));
                o.push_back(collect(r.owned));
                w.push_back(collect(r.weights));
            }
            for (std::size_t i = 0; i < refs.size(); ++i) {
                if (!is_expert(refs[i].split) || w[0][i]->size() == 0) continue;
                if (refs[i].split == Split::ExpertBias && coord.a > 0) continue;
                std::vector<const Mat*> gi, oi, wi;
                for (int f = 0; f < edp; ++f) {
                    gi.push_back(g[static_cast<std::size_t>(f)][i]);
                    oi.push_back(o[static_cast<std::size_t>(f)][i]);
                    wi.push_back(w[static_cast<std::size_t>(f)][i]);
                }
                place_expert_shard(*grads[i], merge_owned(gi, oi), refs[i].split, d, coord);
                place_expert_shard(*weights[i], sharded_weights ? merge_owned(wi, oi) : *w[0][i], refs[i].split, d, coord);
            }
        }
}

double relative(const Mat& got, const Mat& want) {
    if (got.rows() != want.rows() || got.cols() != want.cols()) return INFINITY;
    const double scale = std::max(want.cwiseAbs().maxCoeff(), 1e-300);
    const double diff = (got - want).cwiseAbs().maxCoeff();
    return std::isnan(diff) ? INFINITY : diff / scale;
}

}  // namespace

Execution execute_program(const Scenario& sc, const Layout& l, const TaggedProgram& tp, const GptParams& params,
                          const Batch& batch, const ExecutorOptions& options) {
    const GptDims d = GptDims::of(sc.model);
    if (d.vocab % l.tensor != 0) throw std::invalid_argument("CPU executor: vocabulary must divide by t");
    if (static_cast<int>(batch.tokens.size()) != sc.training.global_batch)
        throw std::invalid_argument("CPU executor: the batch must hold global_batch sequences");
    Fabric fabric(tp.program.groups.size(), options.timeout);
    RunContext ctx;
    ctx.program = &tp.program;
    ctx.tags = &tp.tags;
    ctx.layout = &l;
    ctx.dims = d;
    ctx.batch = &batch;
    ctx.codes = decode_labels(tp.program);
    ctx.micro_batch = sc.training.micro_batch;
    ctx.sp = sc.parallel.sequence_parallel && l.tensor > 1;
    const TensorMesh mesh = tensor_mesh_of(sc, l);
    if (mesh.own_program() && mesh.mode == TensorMode::Atp) ctx.atp_column_axis = mesh.column_axis();
    // 2d keeps the activations between layers split over all t devices, which the embedding, the
    // head and the pipeline see as the sequence-parallel layout (LayerDims::set_mesh).
    ctx.summa = mesh.mode == TensorMode::TwoD && l.tensor > 1;
    ctx.cube = mesh.mode == TensorMode::ThreeD && l.tensor > 1;
    if (ctx.summa || ctx.cube) ctx.sp = true;
    // overlap_chunks: sub-batches of Megatron's layer program, chunks of ATP's (2d and 3d: none).
    ctx.overlap_chunks = mesh.own_program() ? 1 : std::max(1, sc.parallel.overlap_chunks);
    ctx.context = l.context;  // a rank's rows are its s/c positions of each sequence (edge_exec.cpp)
    ctx.token_order = micro_batch_rows(ctx.micro_batch, d.seq / l.context, ctx.overlap_chunks, ctx.sp ? l.tensor : 1);
    if (ctx.atp_column_axis >= 0) {
        ctx.atp_chunks = std::max(1, sc.parallel.overlap_chunks);
        const int dr = l.tensor_mesh[static_cast<std::size_t>(1 - ctx.atp_column_axis)];
        const int groups = atp_token_split(ctx.micro_batch, dr) ? dr : 1;  // attention cores split by the token split
        ctx.token_order = atp_chunk_rows(ctx.micro_batch, d.seq, ctx.atp_chunks, groups);
    }
    ctx.learning_rate = options.learning_rate;
    ctx.zero_stage = sc.parallel.zero_stage;
    ctx.fabric = &fabric;
    const std::size_t n = tp.program.ranks.size();
    std::vector<RankOutcome> outcomes(n);
    std::vector<std::jthread> threads;  // joined also when starting one throws
    for (std::uint32_t r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            try {
                RankRunner runner(ctx, r, params);
                runner.run();
                outcomes[r] = std::move(runner).outcome();
            } catch (const std::exception& e) {
                fabric.abort(e.what());
            }
        });
    threads.clear();  // joins
    Execution ex;
    ex.grads = zeros_like(params);
    ex.weights = zeros_like(params);
    if (const auto why = fabric.abort_reason()) {
        ex.error = *why;
        return ex;
    }
    assemble(l, d, ctx.atp_column_axis, ctx.summa, ctx.cube, sc.parallel.zero_stage == 3, outcomes, ex);
    assemble_experts(l, d, experts_fully_sharded(sc.parallel.zero_stage, l), outcomes, ex);
    if (!l.ends_apart()) {  // one stage holds both ends: the output layer is the embedding itself, no copy
        ex.grads.wout = ex.grads.wemb;
        ex.weights.wout = ex.weights.wemb;
    }
    return ex;
}

Agreement compare(const Execution& run, const Reference& ref, const GptParams& params, double lr) {
    Agreement a;
    a.loss = std::abs(run.loss - ref.loss) / std::abs(ref.loss);
    std::vector<const Mat*> got = collect(run.grads), want = collect(ref.grads), w = collect(run.weights),
                            w0 = collect(params);
    std::vector<ParamRef> refs;
    for_each_param(params, [&](const ParamRef& r, const Mat&) { refs.push_back(r); });
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double e = relative(*got[i], *want[i]);
        if (e > a.grads || (std::isinf(e) && !std::isinf(a.grads))) {
            a.grads = e;
            a.worst = std::string(refs[i].name) + " of block " + std::to_string(refs[i].block);
        }
        a.weights = std::max(a.weights, relative(*w[i], Mat(*w0[i] - lr * *want[i])));
    }
    return a;
}

}  // namespace cuboid::cpu
