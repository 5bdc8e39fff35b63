#include "strategies/mla_layer.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t idx(MlaOp op) { return static_cast<std::size_t>(op); }
constexpr auto kKept = static_cast<std::size_t>(LayerOp::Qkv);  // the projections' slot of the layer's memory
double as_double(std::int64_t v) { return static_cast<double>(v); }

// The latents the RMSNorm reads and writes (query and key/value latents; the rotary key part
// passes it by), on the rank's rows.
double latent_norm_bytes(const LayerDims& d) {
    return 2.0 * d.act_bytes * as_double(d.latent_rows()) * as_double(d.q_lora + d.kv_lora);
}

// The latents of every row of the micro-batch, as the sequence-parallel gather delivers them.
double gathered_latent_bytes(const LayerDims& d) {
    return d.act_bytes * as_double(d.tokens()) * as_double(d.latent_width());
}

sim::Op gemm(const LayerContext& c, std::uint32_t label, const sim::GemmShape& g, OpCategory cat) {
    return gemm_op(label, g, cat, c.dims.act_bytes);
}

// Under sequence parallelism, the normalised latents of every row gathered for the
// up-projections (after op `after`), and the next kernel waits for them; nothing without it.
void gather_latents(OpEmitter& e, const LayerContext& c, Phase ph, std::uint32_t after) {
    if (c.dims.sp)
        e.wait_for(emit_tp_collective_of(e, c, ph, OpKind::AllGather, gathered_latent_bytes(c.dims), after));
}

// The up-projections' weight gradients, after the normalised latent is gathered again under
// sequence parallelism (as the multi-head layer re-gathers LayerNorm's output).
void up_weight_grads(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    gather_latents(e, c, Phase::Backward, e.last_compute());
    e.compute(gemm(c, l.mla_wgrad[idx(MlaOp::QUp)], weight_grad_shape(c.gemms.q_up), OpCategory::Compute));
    e.compute(gemm(c, l.mla_wgrad[idx(MlaOp::KvUp)], weight_grad_shape(c.gemms.kv_up), OpCategory::Compute));
}

// The down-projections' weight gradients; the last releases what the forward kept.
void down_weight_grads(OpEmitter& e, const LayerContext& c) {
    const Labels& l = *c.labels;
    e.compute(gemm(c, l.mla_wgrad[idx(MlaOp::KvDown)], weight_grad_shape(c.gemms.kv_down), OpCategory::Compute));
    sim::Op w = gemm(c, l.mla_wgrad[idx(MlaOp::QDown)], weight_grad_shape(c.gemms.q_down), OpCategory::Compute);
    w.memory_free = Bytes(c.memory.forward[kKept] + c.memory.recompute[kKept]);
    e.compute(w);
}

}  // namespace

LatentAttentionParameters mla_parameters(const LayerDims& d) {
    const double h = as_double(d.h), heads = as_double(d.heads);
    LatentAttentionParameters p;
    p.split = as_double(d.q_lora) * heads * as_double(d.head_dim) + as_double(d.kv_lora) * heads * as_double(d.kv_up_head()) +
              as_double(d.o_width()) * h;
    p.whole = h * as_double(d.q_lora) + h * as_double(d.kv_lora + d.qk_rope) + as_double(d.q_lora + d.kv_lora);
    return p;
}

double mla_stored_bytes(const LayerDims& d) {
    const double rows = as_double(d.latent_rows());
    // LayerNorm 1's output; the latents before the norm (its backward) and after (the
    // up-projections' input); the rotary key part.
    return d.act_bytes * rows * (as_double(d.h) + 2.0 * as_double(d.q_lora + d.kv_lora) + as_double(d.qk_rope));
}

void emit_mla_projections_forward(OpEmitter& e, const LayerContext& c, Phase ph) {
    const LayerDims& d = c.dims;
    const LayerGemms& g = c.gemms;
    const auto& label = c.labels->mla[static_cast<std::size_t>(ph)];
    const PerLayerOp& kept = ph == Phase::Recompute ? c.memory.recompute : c.memory.forward;
    sim::Op q_down = gemm(c, label[idx(MlaOp::QDown)], g.q_down, category(ph));
    q_down.memory_alloc = Bytes(kept[kKept]);
    e.compute(q_down);
    e.compute(gemm(c, label[idx(MlaOp::KvDown)], g.kv_down, category(ph)));
    const std::uint32_t normed =
        e.compute(memory_op(OpKind::LayerNorm, label[idx(MlaOp::LatentNorm)], latent_norm_bytes(d), category(ph)));
    gather_latents(e, c, ph, normed);
    e.compute(gemm(c, label[idx(MlaOp::QUp)], g.q_up, category(ph)));
    e.compute(gemm(c, label[idx(MlaOp::KvUp)], g.kv_up, category(ph)));
}

void emit_mla_up_projections_recompute(OpEmitter& e, const LayerContext& c) {
    const auto& label = c.labels->mla[static_cast<std::size_t>(Phase::Recompute)];
    gather_latents(e, c, Phase::Recompute, e.last_compute());
    sim::Op q_up = gemm(c, label[idx(MlaOp::QUp)], c.gemms.q_up, OpCategory::Recompute);
    q_up.memory_alloc = Bytes(c.memory.recomputed_qkv);
    e.compute(q_up);
    e.compute(gemm(c, label[idx(MlaOp::KvUp)], c.gemms.kv_up, OpCategory::Recompute));
}

void emit_mla_projections_backward(OpEmitter& e, const LayerContext& c) {
    const LayerDims& d = c.dims;
    const LayerGemms& g = c.gemms;
    const auto& label = c.labels->mla[static_cast<std::size_t>(Phase::Backward)];
    e.compute(gemm(c, label[idx(MlaOp::KvUp)], input_grad_shape(g.kv_up), OpCategory::Compute));
    const std::uint32_t dgrad = e.compute(gemm(c, label[idx(MlaOp::QUp)], input_grad_shape(g.q_up), OpCategory::Compute));
    // The latent's gradient is a partial sum over the heads' ranks: reduced (scattered back to
    // each rank's rows under sequence parallelism) before the RMSNorm's backward reads it.
    const OpKind kind = d.sp ? OpKind::ReduceScatter : OpKind::AllReduce;
    const double bytes = gathered_latent_bytes(d);
    const bool overlap = c.tp_backward_overlap || c.defer_weight_grad;
    std::uint32_t reduce = overlap ? emit_tp_collective_of(e, c, Phase::Backward, kind, bytes, dgrad) : kNoOp;
    if (!c.defer_weight_grad) up_weight_grads(e, c);
    if (!overlap) reduce = emit_tp_collective_of(e, c, Phase::Backward, kind, bytes, e.last_compute());
    e.wait_for(reduce);
    e.compute(memory_op(OpKind::LayerNorm, label[idx(MlaOp::LatentNorm)], 2.0 * latent_norm_bytes(d), OpCategory::Compute));
    e.compute(gemm(c, label[idx(MlaOp::KvDown)], input_grad_shape(g.kv_down), OpCategory::Compute));
    e.compute(gemm(c, label[idx(MlaOp::QDown)], input_grad_shape(g.q_down), OpCategory::Compute));
    if (!c.defer_weight_grad) down_weight_grads(e, c);
}

void emit_mla_weight_grads(OpEmitter& e, const LayerContext& c) {
    up_weight_grads(e, c);
    down_weight_grads(e, c);
}

}  // namespace cuboid
