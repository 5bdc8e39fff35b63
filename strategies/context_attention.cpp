#include "strategies/context_attention.hpp"

#include <algorithm>
#include <string>

#include "hardware_models/table_row.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/program_streams.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

std::size_t at(Phase ph) { return static_cast<std::size_t>(ph); }

sim::Op context_comm(OpKind kind, std::uint32_t label, double bytes) {
    return comm_op(kind, label, bytes, stream::kContextComm, slot::kContext, comm_class::kContext);
}

double elements(const LayerDims& d, std::int64_t heads) {
    return static_cast<double>(d.tokens()) * static_cast<double>(heads / d.t) * static_cast<double>(d.head_dim);
}
// Q, K and V of the rank's s/c positions, and its attention output.
double qkv_bytes(const LayerDims& d) { return d.act_bytes * elements(d, d.heads + 2 * d.kv_heads); }
double out_bytes(const LayerDims& d) { return d.act_bytes * elements(d, d.heads); }

// One ring step's kernel: the local s/c queries against one s/c block of keys (the shape that sets
// the kernel's efficiency), doing 1/c of the rank's attention work.
sim::Op ring_step_kernel(const LayerContext& c, Phase ph, bool backward) {
    LayerDims block = c.dims;
    block.keys = c.dims.s;
    const std::uint32_t label = c.labels->cp_attn_step[at(ph)];
    sim::Op o = fused_attention_op(label, block, backward, backward ? OpCategory::Compute : category(ph));
    o.flops = Flops(fused_attention_flops(c.dims, backward) / static_cast<double>(c.dims.cp));
    return o;
}

// The merge of a step's partial output into the result (rescaled by the log-sum-exps): it reads
// the step's 16-bit output and reads and writes the fp32 accumulator.
sim::Op ring_merge(const LayerContext& c, Phase ph) {
    constexpr double kFp32 = 4.0;
    const double bytes = (c.dims.act_bytes + 2.0 * kFp32) * elements(c.dims, c.dims.heads);
    return memory_op(OpKind::Elementwise, c.labels->cp_merge[at(ph)], bytes, category(ph));
}

void ring_forward(OpEmitter& e, const LayerContext& c, Phase ph, double stored) {
    const int cp = static_cast<int>(c.dims.cp);
    const double block = context_kv_block_bytes(c.dims);
    const std::uint32_t produced = e.last_compute();
    std::uint32_t arrived = kNoOp;
    for (int j = 0; j < cp; ++j) {
        std::uint32_t next = kNoOp;
        if (j + 1 < cp) {
            // The block for step j+1 moves while step j computes; the exchanges follow one another
            // on the context stream, each forwarding the block the previous one brought.
            sim::Op x = context_comm(OpKind::RingExchange, c.labels->cp_exchange[at(ph)], block);
            x.memory_alloc = Bytes(block);  // the receive buffer, freed by the step that reads it
            next = e.comm(x, j == 0 ? produced : kNoOp);
        }
        e.wait_for(arrived);
        sim::Op k = ring_step_kernel(c, ph, false);
        if (j == 0) k.memory_alloc = Bytes(stored);
        if (j > 0) k.memory_free = Bytes(block);
        e.compute(k);
        if (j > 0) e.compute(ring_merge(c, ph));
        arrived = next;
    }
}

// Step j works on the block that left its owner j steps before; its dK/dV contribution is added to
// the block's partial dK/dV, which travels one rank behind the block: it arrives from the previous
// rank (the exchange after that rank's step j-1) and leaves after this step's kernel, so that
// after c steps each block's dK/dV comes home complete.
void ring_backward(OpEmitter& e, const LayerContext& c, double stored) {
    const int cp = static_cast<int>(c.dims.cp);
    const double block = context_kv_block_bytes(c.dims);
    const auto ph = Phase::Backward;
    std::uint32_t arrived = kNoOp, partial = kNoOp;
    for (int j = 0; j < cp; ++j) {
        std::uint32_t next = kNoOp;
        if (j + 1 < cp) {
            sim::Op x = context_comm(OpKind::RingExchange, c.labels->cp_exchange[at(ph)], block);
            x.memory_alloc = Bytes(block);
            next = e.comm(x, j == 0 ? e.last_compute() : kNoOp);
        }
        e.wait_for(arrived);
        e.wait_for(partial);
        sim::Op k = ring_step_kernel(c, ph, true);
        if (j > 0) k.memory_free = Bytes(block);
        if (j + 1 == cp) k.memory_free = k.memory_free + Bytes(stored);
        const std::uint32_t grads = e.compute(k);
        partial = e.comm(context_comm(OpKind::RingExchange, c.labels->cp_dkv_exchange, block), grads);
        arrived = next;
    }
    e.wait_for(partial);  // this rank's own block's dK/dV, complete
}

void gather_forward(OpEmitter& e, const LayerContext& c, Phase ph, double stored) {
    const double whole = context_kv_block_bytes(c.dims) * static_cast<double>(c.dims.cp);
    sim::Op g = context_comm(OpKind::AllGather, c.labels->cp_gather[at(ph)], whole);
    g.memory_alloc = Bytes(whole);
    e.wait_for(e.comm(g, e.last_compute()));
    sim::Op k = fused_attention_op(ph == Phase::Recompute ? c.labels->rec[static_cast<std::size_t>(LayerOp::Attn)]
                                                          : c.labels->fwd[static_cast<std::size_t>(LayerOp::Attn)],
                                   c.dims, false, category(ph));
    k.memory_alloc = Bytes(stored);
    k.memory_free = Bytes(whole);
    e.compute(k);
}

void gather_backward(OpEmitter& e, const LayerContext& c, double stored) {
    const double whole = context_kv_block_bytes(c.dims) * static_cast<double>(c.dims.cp);
    const auto ph = Phase::Backward;
    sim::Op g = context_comm(OpKind::AllGather, c.labels->cp_gather[at(ph)], whole);
    g.memory_alloc = Bytes(whole);
    e.wait_for(e.comm(g, e.last_compute()));
    // dK and dV of the whole sequence, reduce-scattered to their owners.
    sim::Op k = fused_attention_op(c.labels->bwd[static_cast<std::size_t>(LayerOp::Attn)], c.dims, true,
                                   OpCategory::Compute);
    k.memory_alloc = Bytes(whole);
    k.memory_free = Bytes(whole + stored);
    const std::uint32_t grads = e.compute(k);
    sim::Op rs = context_comm(OpKind::ReduceScatter, c.labels->cp_scatter[at(ph)], whole);
    rs.memory_free = Bytes(whole);
    e.wait_for(e.comm(rs, grads));
}

// The kernel of the all-to-all mode: heads/c of the tensor rank's heads over the whole sequence.
LayerDims head_split(const LayerDims& d) {
    LayerDims h = d;
    h.s = d.attended();
    h.keys = 0;
    h.heads = d.heads / d.cp;
    h.kv_heads = d.kv_heads / d.cp;
    return h;
}

void all_to_all_forward(OpEmitter& e, const LayerContext& c, Phase ph, double stored) {
    e.wait_for(e.comm(context_comm(OpKind::AllToAll, c.labels->cp_qkv_a2a[at(ph)], qkv_bytes(c.dims)), e.last_compute()));
    sim::Op k = fused_attention_op(ph == Phase::Recompute ? c.labels->rec[static_cast<std::size_t>(LayerOp::Attn)]
                                                          : c.labels->fwd[static_cast<std::size_t>(LayerOp::Attn)],
                                   head_split(c.dims), false, category(ph));
    k.memory_alloc = Bytes(stored);
    const std::uint32_t out = e.compute(k);
    e.wait_for(e.comm(context_comm(OpKind::AllToAll, c.labels->cp_out_a2a[at(ph)], out_bytes(c.dims)), out));
}

void all_to_all_backward(OpEmitter& e, const LayerContext& c, double stored) {
    const auto ph = Phase::Backward;
    e.wait_for(e.comm(context_comm(OpKind::AllToAll, c.labels->cp_out_a2a[at(ph)], out_bytes(c.dims)), e.last_compute()));
    sim::Op k = fused_attention_op(c.labels->bwd[static_cast<std::size_t>(LayerOp::Attn)], head_split(c.dims), true,
                                   OpCategory::Compute);
    k.memory_free = Bytes(stored);
    const std::uint32_t grads = e.compute(k);
    e.wait_for(e.comm(context_comm(OpKind::AllToAll, c.labels->cp_qkv_a2a[at(ph)], qkv_bytes(c.dims)), grads));
}

// All-to-all (DeepSpeed-Ulysses) gives each context rank whole heads.
void check_whole_heads(const PlanChecker& c, const Scenario& sc) {
    const ParallelPlan& p = sc.parallel;
    const int t = std::max(1, p.tensor);
    const int heads = sc.model.heads / t, kv = sc.model.kv_heads_or_default() / t;
    const std::string cp = std::to_string(p.context);
    c.require(heads % p.context == 0 && kv % p.context == 0, "parallel.context_mode",
              "all-to-all (DeepSpeed-Ulysses) gives each of the " + cp + " context ranks whole heads: the " +
                  std::to_string(heads) + " query heads and " + std::to_string(kv) +
                  " key/value heads per tensor rank must be multiples of context " + cp + "; use ring or all-gather");
}

constexpr ContextModeKind kContextModes[] = {
    {ContextMode::Ring, "ring",
     "K/V blocks passed around the context group, overlapped with blockwise attention (Transformer Engine p2p; "
     "Liu et al. 2023, ring attention)",
     ring_forward, ring_backward, nullptr, 8.0},
    {ContextMode::AllGather, "all-gather",
     "K/V all-gathered before attention, dK/dV reduce-scattered (Llama 3, Dubey et al. 2024)", gather_forward,
     gather_backward, nullptr, 0.0},
    {ContextMode::AllToAll, "all-to-all",
     "Q/K/V exchanged from sequence to head split and back (DeepSpeed-Ulysses, Jacobs et al. 2023)",
     all_to_all_forward, all_to_all_backward, check_whole_heads, 0.0},
};

}  // namespace

std::span<const ContextModeKind> context_mode_kinds() { return kContextModes; }

const ContextModeKind& context_mode_kind(ContextMode m) {
    return table_row(context_mode_kinds(), m, "context_mode_kind");
}

double context_kv_block_bytes(const LayerDims& d) { return 2.0 * d.act_bytes * elements(d, d.kv_heads); }

void emit_context_attention_forward(OpEmitter& e, const LayerContext& c, Phase ph, double stored) {
    context_mode_kind(c.dims.cp_mode).forward(e, c, ph, stored);
}

void emit_context_attention_backward(OpEmitter& e, const LayerContext& c, double stored) {
    context_mode_kind(c.dims.cp_mode).backward(e, c, stored);
}

}  // namespace cuboid
