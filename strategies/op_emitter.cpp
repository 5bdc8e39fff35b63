#include "strategies/op_emitter.hpp"

namespace cuboid {

std::uint32_t OpEmitter::append(sim::Op op, const std::uint32_t* deps, std::uint32_t count) {
    op.first_dep = static_cast<std::uint32_t>(list_.deps.size());
    op.dep_count = count;
    op.precision = precision_;
    // fp8 training (Transformer Engine's recipe) runs the linear layers' GEMMs in fp8 and keeps
    // the attention core (QK^T, softmax, PV: the batched GEMMs) in 16 bit; its fp8 attention is
    // an option that is off by default.
    if (op.kind == sim::OpKind::BatchedGemm && precision_ == sim::Precision::Fp8) op.precision = sim::Precision::Bf16;
    list_.deps.insert(list_.deps.end(), deps, deps + count);
    list_.ops.push_back(op);
    if (tags_ != nullptr) tags_->push_back(context_);
    return static_cast<std::uint32_t>(list_.ops.size() - 1);
}

std::uint32_t OpEmitter::compute(sim::Op op) {
    op.stream = sim::stream::kCompute;
    const std::uint32_t i = append(op, pending_.data(), static_cast<std::uint32_t>(pending_.size()));
    pending_.clear();
    last_compute_ = i;
    return i;
}

std::uint32_t OpEmitter::comm(sim::Op op, std::uint32_t after) {
    return after == kNoOp ? append(op, nullptr, 0) : append(op, &after, 1);
}

std::uint32_t OpEmitter::comm(sim::Op op, const std::vector<std::uint32_t>& after) {
    return append(op, after.data(), static_cast<std::uint32_t>(after.size()));
}

sim::Op gemm_op(std::uint32_t label, const sim::GemmShape& g, sim::OpCategory cat, double act_bytes) {
    sim::Op op;
    op.kind = g.batch > 1 ? sim::OpKind::BatchedGemm : sim::OpKind::Gemm;
    op.category = cat;
    op.label = label;
    op.shape = g;
    op.flops = Flops(gemm_flops(g));
    const double elems = static_cast<double>(g.m * g.k + g.k * g.n + g.m * g.n) * static_cast<double>(g.batch);
    op.bytes = Bytes(elems * act_bytes);
    return op;
}

sim::Op memory_op(sim::OpKind kind, std::uint32_t label, double bytes, sim::OpCategory cat) {
    sim::Op op;
    op.kind = kind;
    op.category = cat;
    op.label = label;
    op.bytes = Bytes(bytes);
    return op;
}

sim::Op comm_op(sim::OpKind kind, std::uint32_t label, double bytes, sim::StreamId stream,
                std::uint16_t slot, sim::OpCategory cat) {
    sim::Op op;
    op.kind = kind;
    op.category = cat;
    op.label = label;
    op.bytes = Bytes(bytes);
    op.stream = stream;
    op.group_slot = slot;
    return op;
}

}  // namespace cuboid
