// What each program label means to the CPU executor: the label table of strategies/labels.hpp
// mapped to families of work. A label outside the table (a new tensor mode's ops, say) is
// Unknown and stops the run with its name, so the executor never silently skips work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/program.hpp"
#include "strategies/labels.hpp"

namespace cuboid::cpu {

enum class Family : std::uint8_t {
    Unknown,
    LayerKernel,   // F./R./B. + layer kernel (GEMMs: B.x.dgrad / B.x.wgrad)
    TpCollective,  // F./R./B.tp.{allreduce, allgather, reducescatter}
    Embed, EmbedDropout, FinalLn, Logits, Xent, XentReduce,
    SendAct, RecvAct, SendGrad, RecvGrad, PpGather,
    DpReduce, DpGather, Optimizer,
    TpGradSync,    // tp.grad_allreduce: LayerNorm / bias gradients partial over a device's rows
    EmbGradSync,   // emb.grad_allreduce: the tied word embedding's gradient, first + last stage
    // ZeRO-3 (fsdp_exec.cpp): a unit's weight all-gather before its forward / backward, its
    // gradient reduce-scatter, the all-reduce of its gradient shard between hybrid copies.
    FsdpGather, FsdpReduceScatter, FsdpReplicaReduce,
    // ZeRO-3 of the routed experts: an expert layer's expert shards gathered over the expert-data
    // group before its forward / backward, their gradient reduce-scattered over it, and under
    // hybrid sharding the gradient shard all-reduced between the copies.
    FsdpExpertGather, FsdpExpertReduceScatter, FsdpExpertReplicaReduce,
    // Passes that change no value of the executor's model, which computes in fp32 without a
    // rotary embedding, loss scaling or clipping: Transformer Engine's fp8 casts and transposes,
    // the rotary embedding kernel, the gradient norm, the unscale and the zeroing of gradients,
    // activation offloading's copies to host memory and back.
    // The executor skips them; they are priced like any kernel.
    NumericallyInert,
    // Context parallelism (context_exec.cpp): the ring's attention steps and merges, and the
    // modes' collectives (which one: OpCode::context).
    ContextKernel, ContextComm,
    // Mixture of experts (moe_exec.cpp): the MLP's kernels (which one: OpCode::moe), its token
    // exchanges (OpCode::exchange), and the expert gradients' reduction and the experts' ZeRO
    // gather over the expert-data group.
    MoeKernel, MoeComm, EdpReduce, EdpGather,
};

// The token exchanges of a mixture-of-experts MLP (strategies/moe_layer.hpp).
enum class MoeExchange : std::uint8_t {
    None,
    Dispatch,    // all-to-all over the expert group: forward to the experts, backward back from them
    Combine,     // all-to-all over the expert group: forward back from the experts, backward to them
    EtpGather,   // all-gather over the expert-tensor group, on the way to the experts
    EtpScatter,  // reduce-scatter over the expert-tensor group, on the way back
};

// The context-parallel op of a ContextKernel / ContextComm label (strategies/context_attention.hpp).
enum class ContextOp : std::uint8_t {
    None,
    Step, Merge,                 // ring: one key block's kernel; its partial output merged
    Exchange, DkvExchange,       // ring: the K/V block one rank on; the partial dK/dV one rank on
    Gather, ReduceScatter,       // all-gather: K/V of every position; dK/dV summed back to their owners
    QkvAllToAll, OutAllToAll,    // all-to-all: sequence split <-> head split
};

struct OpCode {
    Family family = Family::Unknown;
    Phase phase = Phase::Forward;
    LayerOp op = LayerOp::Count;  // LayerKernel only
    bool wgrad = false;           // backward GEMMs: the weight-gradient half
    ContextOp context = ContextOp::None;
    MoeOp moe = MoeOp::Count;                 // MoeKernel only
    MoeExchange exchange = MoeExchange::None;  // MoeComm only
};

// One code per label of `program`.
std::vector<OpCode> decode_labels(const sim::Program& program);

}  // namespace cuboid::cpu
