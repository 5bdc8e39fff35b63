// The program: what every rank executes in one training iteration, as plain data.
//
// `strategies` builds it, `hardware_models` prices it, `sim` executes it as events, and the
// validation executors run the very same structure on real devices. It knows nothing of
// transformers: a compute op is FLOPs, bytes and a GEMM shape; a communication op is a
// collective on a group of ranks.
//
// Ranks that run the same work (all ranks of one pipeline stage, say) share one OpList; what
// differs between them is only which concrete groups their group slots name. This is how an SPMD
// training job is written too (every rank runs the same code with its own communicators) and it
// keeps a 3072-rank program small. Every rank is still simulated op by op.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/units.hpp"

namespace cuboid::sim {

enum class OpKind : std::uint8_t {
    // Compute (priced by FLOPs and bytes through the hardware model).
    Gemm,         // one matrix product [m,k]x[k,n], `shape.batch` == 1
    BatchedGemm,  // `shape.batch` independent products (attention scores, attention x values)
    // The attention core as one fused kernel (FlashAttention, cuDNN fused attention): priced by
    // FLOPs at the GPU's attention efficiency for the sequence length. `shape` holds
    // {queries, keys, head_dim, batch * heads}; `flops` is the work the kernel does (causal
    // masking skips whole blocks).
    FusedAttention,
    FusedAttentionBackward,
    LayerNorm,    // memory-bound kernels from here on: priced by bytes moved
    Softmax,
    Activation,   // GeLU / SwiGLU
    Dropout,
    Elementwise,  // residual add, bias add, scale
    Embedding,    // gather / scatter of rows
    CrossEntropy,
    Optimizer,    // Adam update over the local shard of parameters
    HostDispatch, // the host thread issuing the next GPU op (framework + launch), on a stream of its own
    // Communication (priced by the collective planner as flows on the network).
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    AllToAll,
    Send,  // point-to-point: matched with the Recv of the other member of a 2-rank group
    Recv,
    // Every member sends `bytes` to the next member of the group's ring order and receives as
    // much from the previous one, all at once (a neighbour exchange: NCCL send/recv in one group
    // call). Last, so that the kinds before it keep their values.
    RingExchange,
    // The optimizer step offloaded to the host (training.optimizer_offload), on the compute stream
    // after the new kinds above so that those keep their values: the gradient shard copied to
    // host memory over the GPU's host link, Adam run by the CPU over host memory (priced by the
    // bytes it moves), the updated 16-bit weights copied back.
    DeviceToHost,
    HostOptimizer,
    HostToDevice,
};

inline constexpr bool is_communication(OpKind k) { return k >= OpKind::AllReduce && k <= OpKind::RingExchange; }
inline constexpr bool is_host_offload(OpKind k) { return k >= OpKind::DeviceToHost; }
inline constexpr bool is_gemm(OpKind k) { return k == OpKind::Gemm || k == OpKind::BatchedGemm; }
inline constexpr bool is_fused_attention(OpKind k) {
    return k == OpKind::FusedAttention || k == OpKind::FusedAttentionBackward;
}
// Kernels whose work is matrix products on the tensor cores (counted in achieved FLOP/s).
inline constexpr bool is_matmul(OpKind k) { return is_gemm(k) || is_fused_attention(k); }

// What an op's time counts as in the iteration breakdown: compute, recomputation, or the
// communication of one of the program's communication classes (Program::comm_classes). sim names
// no parallelism dimension: the program's builder says which classes exist (tensor, pipeline,
// data, ... in cuboid's strategies) and ranks them; comm_category(i) is class i. A copy that is
// not a collective (a host transfer on a stream of its own) may carry a class too: while it runs,
// the breakdown counts it as that class's data moving.
enum class OpCategory : std::uint8_t {
    Compute,    // forward, backward and optimizer work
    Recompute,  // forward work repeated for activation recomputation
};
inline constexpr int kMaxCommClasses = 6;
inline constexpr OpCategory comm_category(int comm_class) { return static_cast<OpCategory>(2 + comm_class); }
// The communication class of a category; negative for Compute and Recompute.
inline constexpr int comm_class_of(OpCategory category) { return static_cast<int>(category) - 2; }

// A communication class as sim sees it. Classes are listed in the order in which the breakdown
// charges the compute stream's idle time to communication that is moving data then (the first
// class with a transfer in flight takes it), and named in traces ("<name>_comm") and results.
struct CommClass {
    std::string name;
    // Its collectives may form lockstep runs (sim/engine_lockstep.cpp): collectives between every
    // compute chain of a layer, which the compute stream waits for before doing anything else.
    bool lockstep = false;
};

enum class Precision : std::uint8_t { Fp32, Tf32, Fp16, Bf16, Fp8 };

// Bytes per element of a precision's storage type (tf32 is stored as fp32).
inline constexpr double bytes_per_element(Precision p) {
    switch (p) {
        case Precision::Fp32:
        case Precision::Tf32: return 4.0;
        case Precision::Fp16:
        case Precision::Bf16: return 2.0;
        case Precision::Fp8: return 1.0;
    }
    return 4.0;
}

// Streams of a rank: ops on one stream run in program order, streams run concurrently. Stream 0
// is the compute stream, whose chains the breakdown times and lockstep runs merge; the other
// numbers are the program builder's, named in Program::stream_names.
using StreamId = std::uint8_t;
inline constexpr StreamId kComputeStream = 0;

struct GemmShape {
    std::int64_t m = 0;  // rows of the output (tokens)
    std::int64_t n = 0;  // columns of the output
    std::int64_t k = 0;  // reduction dimension
    std::int64_t batch = 1;
};

// A GemmShape as an Op stores it: 32-bit dimensions, which keep an Op at one 64-byte cache line
// (a program of a 1,024-GPU plan holds millions of ops, and every pass over them, from building
// to indexing, reads whole lines). Products of dimensions are formed in 64 bits or doubles by
// their readers, never in these fields.
struct PackedGemmShape {
    std::int32_t m = 0;
    std::int32_t n = 0;
    std::int32_t k = 0;
    std::int32_t batch = 1;

    // Throws std::length_error when a dimension is negative or does not fit in 32 bits.
    static PackedGemmShape of(const GemmShape& g);
    GemmShape unpacked() const { return {m, n, k, batch}; }
};

inline constexpr std::uint32_t kMaxOpDependencies = 0xffff;

struct Op {
    OpKind kind = OpKind::Elementwise;
    OpCategory category = OpCategory::Compute;
    Precision precision = Precision::Bf16;
    StreamId stream = kComputeStream;
    std::uint16_t group_slot = 0;  // communication: index into RankProgram::groups
    std::uint16_t dep_count = 0;   // at most kMaxOpDependencies (the builders check)
    std::uint32_t label = 0;       // index into Program::labels ("L3.fwd.qkv")
    std::uint32_t first_dep = 0;   // this op's dependencies: OpList::deps[first_dep, first_dep+dep_count)
    PackedGemmShape shape{};       // Gemm / BatchedGemm only
    Flops flops{0.0};              // compute: floating-point operations
    Bytes bytes{0.0};              // compute: HBM bytes read+written; communication: buffer size per rank
    Bytes memory_alloc{0.0};       // allocated when the op starts (activations it stores, buffers)
    Bytes memory_free{0.0};        // released when the op ends
};
static_assert(sizeof(Op) == 64, "an Op is one cache line");

// Throws std::length_error for an op given `count` > kMaxOpDependencies dependencies.
[[noreturn]] void throw_too_many_dependencies(std::uint32_t count);

// The ops of one kind of rank, in issue order. Dependencies point to earlier ops of the same list
// (cross-rank ordering comes only from communication).
struct OpList {
    std::vector<Op> ops;
    std::vector<std::uint32_t> deps;
    Bytes resident{0.0};  // memory held for the whole iteration: weights, gradients, optimizer state
};

// A communicator: the ranks of one group (a tensor, pipeline-pair or data group in cuboid's
// plans). The k-th communication op that each member issues on a group is one instance; it starts
// when every member has issued it (as with an NCCL communicator, members issue a group's
// collectives in the same order).
struct Group {
    std::vector<std::uint32_t> ranks;  // in ring order; for a Send/Recv pair: {lower stage, higher stage}
    std::uint32_t label = 0;            // index into Program::labels
};

struct RankProgram {
    std::uint32_t op_list = 0;            // index into Program::op_lists
    std::vector<std::uint32_t> groups;    // slot -> index into Program::groups
};

// Rank r runs on device r of the cluster.
struct Program {
    // What the builder calls its streams (index: StreamId; a stream past the end is "stream N")
    // and its communication classes (index: comm_class_of(category)), which every communication
    // op's category must name.
    std::vector<std::string> stream_names;
    std::vector<CommClass> comm_classes;
    std::vector<std::string> labels;
    std::vector<OpList> op_lists;
    std::vector<Group> groups;
    std::vector<RankProgram> ranks;

    std::uint32_t intern(const std::string& label);  // index of `label` in labels, added if new

    // Lookup index for intern(): covers labels[0, size of the map); labels appended directly are
    // indexed on the next intern() call.
    std::unordered_map<std::string, std::uint32_t> label_index;
};

// Appends ops with their dependencies to an OpList; returns op indices to depend on.
class OpListBuilder {
public:
    explicit OpListBuilder(OpList& list) : list_(list) {}
    std::uint32_t add(Op op, std::initializer_list<std::uint32_t> deps = {});
    std::uint32_t add(Op op, const std::vector<std::uint32_t>& deps);

private:
    OpList& list_;
};

}  // namespace cuboid::sim
