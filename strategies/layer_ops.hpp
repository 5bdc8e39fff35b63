// The kernels of one transformer layer for one micro-batch on one tensor-parallel rank, as
// Megatron runs them: forward, backward (input- and weight-gradient GEMMs), the recomputation a
// policy asks for, and the tensor-parallel collectives between them.
//
// With overlap_chunks k > 1 (Merak's sub-pipelined tensor parallelism, seed_algorithms §1.3) each
// layer runs its micro-batch as k sub-batches: the reduction of sub-batch i's output is in flight
// on the tensor stream while sub-batch i+1 computes, in the forward and (reversed) in the backward.
//
// Collectives (t > 1): without sequence parallelism an all-reduce of the b*s*h activation after
// the projection and after FC2 (forward), and of the input gradient after the QKV and FC1
// input-gradient GEMMs (backward). With sequence parallelism each all-reduce becomes a
// reduce-scatter, and an all-gather runs before QKV and FC1 (forward) and before the projection
// and FC2 input-gradient GEMMs (backward); the backward also re-gathers the LayerNorm output for
// the weight gradient (Korthikanti et al. 2022 §4.2.2). Forward collectives block the next kernel
// (no overlap); in the backward the input-gradient reduction overlaps the weight-gradient GEMM,
// as Megatron's asynchronous tensor-parallel all-reduce does.
#pragma once

#include "strategies/activation_memory.hpp"
#include "strategies/labels.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/op_emitter.hpp"

namespace cuboid {

struct LayerContext {
    LayerDims dims;
    LayerGemms gemms;
    LayerMemory memory;
    Recompute recompute = Recompute::None;
    bool tp_backward_overlap = true;  // see ParallelPlan::tp_backward_overlap
    int overlap_chunks = 1;           // sub-batches per micro-batch, see ParallelPlan::overlap_chunks
    // Zero-bubble schedules (schedule.hpp splits_backward): the backward leaves the linear layers'
    // weight-gradient GEMMs (and, under sequence parallelism, the LayerNorm re-gathers they read)
    // to emit_layer_weight_grad, and their saved inputs stay allocated until then.
    bool defer_weight_grad = false;
    const Labels* labels = nullptr;

    static LayerContext make(const LayerDims& d, Recompute r, const Labels& labels);
    // The same layer under another recompute policy (memory split and inner recompute).
    LayerContext with_policy(Recompute r) const;
    double bsh() const { return static_cast<double>(dims.tokens() * dims.h); }
    bool tp() const { return dims.t > 1; }
};

// The op kind that prices a memory-bound kernel of the layer (LayerNorm, softmax, ...); the
// tensor modes' layers use the same kinds.
sim::OpKind memory_kind(LayerOp op);

// Megatron-Core's layernorm module: the norm runs again from its kept input at the start of its
// block's backward (its output-discarding checkpoint recomputes when the gradient of the block's
// output arrives), writing the `output` bytes (LayerMemory::recomputed_norm1/2) that the next
// GEMM's weight gradient reads and frees; nothing when `output` is 0. The callers emit it after
// the sequence-parallel gather of that gradient, which the block's first GEMM waits for: a
// collective carries what the kernel before it produced, and the two orders take the same time.
void emit_norm_recompute(OpEmitter& e, const LayerContext& c, LayerOp norm, double output);

// The fused attention kernel (forward or backward) of a rank with these dimensions.
sim::Op fused_attention_op(std::uint32_t label, const LayerDims& d, bool backward, sim::OpCategory cat);

// The ordinary forward of one layer (stores what the recompute policy keeps).
void emit_layer_forward(OpEmitter& e, const LayerContext& c);
// The backward of one layer, preceded by its recomputation when the policy asks for it.
void emit_layer_backward(OpEmitter& e, const LayerContext& c);
// The weight-gradient pass W of one layer after a backward with defer_weight_grad: the wgrad GEMMs
// of FC2, FC1, the projection and QKV, each freeing the input its forward saved.
void emit_layer_weight_grad(OpEmitter& e, const LayerContext& c);
// The recomputed forward of one layer on its own (Merak's R pass), allocating what `c`'s forward
// did not keep; the backward that follows must not recompute again (policy None, same memory).
void emit_layer_recompute(OpEmitter& e, const LayerContext& c);

// A tensor-parallel collective of a full b*s*h activation after op `after`; kNoOp when t == 1.
std::uint32_t emit_tp_collective(OpEmitter& e, const LayerContext& c, Phase phase, sim::OpKind kind,
                                 std::uint32_t after);
// The same of a full tensor of `bytes` (all rows of the micro-batch; the latents of mla_layer.hpp).
std::uint32_t emit_tp_collective_of(OpEmitter& e, const LayerContext& c, Phase phase, sim::OpKind kind, double bytes,
                                    std::uint32_t after);

}  // namespace cuboid
