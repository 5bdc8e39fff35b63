// Appends ops to one stage's OpList with the dependencies the builder needs, fast: the program
// of a 3072-GPU plan has millions of ops.
//
// Ops on one stream already run in program order, so only cross-stream edges are recorded: a
// communication op depends on the compute op that produced its buffer, and a compute op that
// consumes a communication result waits for it (`wait_for`).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "strategies/layer_shapes.hpp"
#include "strategies/op_tag.hpp"

namespace cuboid {

inline constexpr std::uint32_t kNoOp = 0xFFFFFFFFu;

class OpEmitter {
public:
    OpEmitter(sim::OpList& list, sim::Precision precision) : list_(list), precision_(precision) {}

    // A compute op on the compute stream; it depends on every op passed to wait_for since the
    // previous compute op.
    std::uint32_t compute(sim::Op op);
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
