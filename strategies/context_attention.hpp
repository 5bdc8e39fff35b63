// The attention core of one layer under context parallelism, as Megatron-Core runs it through
// Transformer Engine's fused attention.
//
// The c ranks of a context group each hold 2 of the 2c chunks of every sequence (chunk i and
// chunk 2c-1-i, so that causal attention costs every rank the same); every other kernel of the
// layer works on those b*s/c tokens alone. Attention needs the keys and values of the whole
// sequence, and the mode says how they come:
//   ring (TE's "p2p"; Liu et al. 2023): c steps; step j runs the fused kernel of the local queries
//     against one rank's K/V block while the next block moves one rank along the ring
//     (RingExchange on the context stream), and merges its partial output into the result by
//     its log-sum-exp. The backward runs c steps again, the K/V blocks moving as in the forward
//     and each block's partial dK/dV one rank behind it, home after the last step.
//   all-gather (Llama 3, Dubey et al. 2024): K and V all-gathered before one kernel of the
//     local queries against the whole sequence; the backward gathers them again and
//     reduce-scatters dK and dV.
//   all-to-all (DeepSpeed-Ulysses, Jacobs et al. 2023): an all-to-all turns Q, K, V from
//     sequence-split into head-split (heads/c of each tensor rank's heads, the whole sequence),
//     one kernel runs, and an all-to-all turns the output back; the backward mirrors both.
// Each rank computes 1/c of the layer's attention FLOPs in every mode (the causal tile fraction of
// the whole sequence, layer_shapes.hpp). The communication is tensor_comm in the breakdown: like
// tensor parallelism's it sits on each layer's critical path unless the kernels hide it.
#pragma once

#include <cstdint>
#include <span>

#include "strategies/layer_ops.hpp"
#include "strategies/plan_checker.hpp"

namespace cuboid {

// The context modes as one descriptor table: a row per mode with its scenario word, its one line
// with the source, its forward and backward emitters, its own plan rules and the ops a layer adds
// per context rank (the work estimate's count). The parser, `cuboid list`, the search space, the
// plan checks, the layer builder and the work estimate read it, so a new mode is a row here and
// its two emitters.
struct ContextModeKind {
    ContextMode value;
    const char* name;         // the scenario word
    const char* description;  // one line, with the source
    // The forward (or recomputed) attention core and its backward, as emit_context_attention_*.
    void (*forward)(OpEmitter& e, const LayerContext& c, Phase ph, double stored);
    void (*backward)(OpEmitter& e, const LayerContext& c, double stored);
    // What the mode needs beyond context parallelism's own rules (nullptr: nothing), checked at
    // the offending key.
    void (*check)(const PlanChecker& c, const Scenario& sc);
    // Ops one layer's attention adds per context rank, forward and backward with their
    // recomputation (the ring's kernel, exchange and merge per step each way), for the work
    // estimate that sizes a run before it is built.
    double ops_per_context_rank;
};

std::span<const ContextModeKind> context_mode_kinds();
const ContextModeKind& context_mode_kind(ContextMode m);  // std::logic_error for a mode with no row

// Bytes of one rank's K and V for its s/c positions (the block a ring step moves).
double context_kv_block_bytes(const LayerDims& d);

// The forward (or recomputed) attention core of `c` (c.dims.cp > 1), from the K/V the last
// compute op produced; its kernel allocates `stored`, what the backward needs.
void emit_context_attention_forward(OpEmitter& e, const LayerContext& c, Phase ph, double stored);
// Its backward, which releases `stored`; the next compute op (the QKV input gradient) waits for
// the last collective.
void emit_context_attention_backward(OpEmitter& e, const LayerContext& c, double stored);

}  // namespace cuboid
