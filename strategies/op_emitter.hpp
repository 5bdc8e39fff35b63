// Appends ops to one stage's OpList with the dependencies the builder needs, fast: the program
// of a 3072-GPU plan has millions of ops.
//
// Ops on one stream already run in program order, so only cross-stream edges are recorded: a
// communication op depends on the compute op that produced its buffer, and a compute op that
// consumes a communication result waits for it (`wait_for`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/op_tag.hpp"

namespace cuboid {

inline constexpr std::uint32_t kNoOp = 0xFFFFFFFFu;

// The ops one emission appended (a layer's forward, say), kept to be appended again. Every layer
// of a stage emits the same kernels, so the stage builder emits each kind of layer once and
// copies it after, instead of working out every op's shape, FLOPs and bytes again (a sweep point
// of GPT-3 on 1,024 GPUs builds about a million ops). An emission reads nothing of the emitter
// but its precision and its state at the start (the ops the next compute op waits for, the last
// compute op; op indices are only passed on, never inspected), so a dependency is either an op of
// the run (stored relative to the run's first op) or one of those start values (stored as
// kFromStart + its position, the pending ops first, then the last compute op).
struct OpRun {
    static constexpr std::uint32_t kFromStart = 0x80000000u;
    static constexpr std::size_t kMaxStart = 8;  // start values a run may name
    std::size_t start_pending = 0;       // the start it was recorded after: pending ops
    bool start_last = false;             // and whether there was a last compute op
    std::vector<sim::Op> ops;            // first_dep relative to the run's first dependency
    std::vector<std::uint32_t> deps;
    std::vector<std::uint32_t> pending;  // the emitter's pending waits after the run
    std::uint32_t last_compute = kNoOp;  // the last compute op after the run (kNoOp: none)
};

class OpEmitter {
public:
    OpEmitter(sim::OpList& list, sim::Precision precision) : list_(list), precision_(precision) {}

    // A compute op on the compute stream; it depends on every op passed to wait_for since the
    // previous compute op.
    std::uint32_t compute(sim::Op op);
    // A compute op that stays 16-bit under fp8 training: Transformer Engine's recipe runs the
    // linear layers in fp8 and keeps the output layer (the logits GEMMs) in bf16.
    std::uint32_t compute_16bit(sim::Op op);
    // A communication op that depends on `after` (kNoOp: nothing).
    std::uint32_t comm(sim::Op op, std::uint32_t after);
    // A communication op that depends on several ops.
    std::uint32_t comm(sim::Op op, const std::vector<std::uint32_t>& after);
    // The next compute op waits for `op` (kNoOp is ignored).
    void wait_for(std::uint32_t op) {
        if (op != kNoOp) pending_.push_back(op);
    }
    std::uint32_t last_compute() const { return last_compute_; }
    sim::Precision precision() const { return precision_; }
    sim::OpList& list() { return list_; }
    // Optional side table: every appended op gets the current context as its tag.
    void set_tags(std::vector<OpTag>* tags) { tags_ = tags; }
    void set_context(const OpTag& context) { context_ = context; }
    const OpTag& context() const { return context_; }

    // Recording an emission as an OpRun: the state before it (mark), then the run of what was
    // appended since (record). A replayed run appends exactly what the emission would append
    // after a start with as many pending ops and a last compute op as present (or absent) as at
    // the mark. Tags are not part of a run: a tagging caller emits directly.
    struct Mark {
        std::size_t ops = 0, deps = 0;
        std::vector<std::uint32_t> start;  // pending ops, then the last compute op if any
        bool has_last = false;
    };
    Mark mark() const;
    // False when the run cannot be told apart from its start: a dependency on an earlier op that
    // is not one of the start values, or a start value that appears twice.
    bool record(const Mark& mark, OpRun& run) const;
    // Whether the emitter's state now has the start shape `run` was recorded after (never while
    // tagging: a run has no tags).
    bool can_replay(const OpRun& run) const {
        return tags_ == nullptr && pending_.size() == run.start_pending && (last_compute_ != kNoOp) == run.start_last;
    }
    void replay(const OpRun& run);  // requires can_replay(run)
    std::size_t pending_count() const { return pending_.size(); }

private:
    std::uint32_t append(sim::Op op, const std::uint32_t* deps, std::uint32_t count);

    sim::OpList& list_;
    sim::Precision precision_;
    std::vector<std::uint32_t> pending_;
    std::uint32_t last_compute_ = kNoOp;
    std::vector<OpTag>* tags_ = nullptr;
    OpTag context_{};
};

// Op constructors. `act_bytes` is the activation element size; GEMM bytes are the three operands.
sim::Op gemm_op(std::uint32_t label, const sim::GemmShape& g, sim::OpCategory cat, double act_bytes);
sim::Op memory_op(sim::OpKind kind, std::uint32_t label, double bytes, sim::OpCategory cat);
sim::Op comm_op(sim::OpKind kind, std::uint32_t label, double bytes, sim::StreamId stream,
                std::uint16_t slot, sim::OpCategory cat);

}  // namespace cuboid
