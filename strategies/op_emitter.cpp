#include "strategies/op_emitter.hpp"

#include <algorithm>

#include "strategies/program_streams.hpp"

namespace cuboid {
namespace {

// One op index of a run as OpRun stores it; false when it names an op before the run that is not
// exactly one of the start values (then the run would not be a function of the start alone).
bool encode(std::uint32_t op, const OpEmitter::Mark& m, std::uint32_t& out) {
    if (op == kNoOp) {
        out = kNoOp;
        return true;
    }
    if (op >= m.ops) {
        out = op - static_cast<std::uint32_t>(m.ops);
        return out < OpRun::kFromStart;
    }
    const auto at = std::find(m.start.begin(), m.start.end(), op);
    if (at == m.start.end() || std::find(at + 1, m.start.end(), op) != m.start.end()) return false;
    out = OpRun::kFromStart | static_cast<std::uint32_t>(at - m.start.begin());
    return true;
}

// The op index `code` stands for in a run appended at `first` after `start`.
std::uint32_t decode(std::uint32_t code, std::uint32_t first, const std::uint32_t* start) {
    if (code == kNoOp) return kNoOp;
    return code & OpRun::kFromStart ? start[code & ~OpRun::kFromStart] : first + code;
}

}  // namespace

std::uint32_t OpEmitter::append(sim::Op op, const std::uint32_t* deps, std::uint32_t count) {
    op.first_dep = static_cast<std::uint32_t>(list_.deps.size());
    if (count > sim::kMaxOpDependencies) sim::throw_too_many_dependencies(count);
    op.dep_count = static_cast<std::uint16_t>(count);
    op.precision = precision_;
    // fp8 training (Transformer Engine's recipe) runs the linear layers' GEMMs in fp8 and keeps
    // the attention core (QK^T, softmax, PV: the batched GEMMs) in 16 bit; its fp8 attention is
    // an option that is off by default.
    // The fused attention kernel is 16-bit for the same reason.
    if ((op.kind == sim::OpKind::BatchedGemm || sim::is_fused_attention(op.kind)) && precision_ == sim::Precision::Fp8)
        op.precision = sim::Precision::Bf16;
    list_.deps.insert(list_.deps.end(), deps, deps + count);
    list_.ops.push_back(op);
    if (tags_ != nullptr) tags_->push_back(context_);
    return static_cast<std::uint32_t>(list_.ops.size() - 1);
}

std::uint32_t OpEmitter::compute(sim::Op op) {
    op.stream = stream::kCompute;
    const std::uint32_t i = append(op, pending_.data(), static_cast<std::uint32_t>(pending_.size()));
    pending_.clear();
    last_compute_ = i;
    return i;
}

std::uint32_t OpEmitter::compute_16bit(sim::Op op) {
    const std::uint32_t i = compute(op);
    if (precision_ == sim::Precision::Fp8) list_.ops[i].precision = sim::Precision::Bf16;
    return i;
}

std::uint32_t OpEmitter::comm(sim::Op op, std::uint32_t after) {
    return after == kNoOp ? append(op, nullptr, 0) : append(op, &after, 1);
}

std::uint32_t OpEmitter::comm(sim::Op op, const std::vector<std::uint32_t>& after) {
    return append(op, after.data(), static_cast<std::uint32_t>(after.size()));
}

OpEmitter::Mark OpEmitter::mark() const {
    Mark m{list_.ops.size(), list_.deps.size(), pending_, last_compute_ != kNoOp};
    if (m.has_last) m.start.push_back(last_compute_);
    return m;
}

bool OpEmitter::record(const Mark& m, OpRun& run) const {
    run.start_pending = m.start.size() - (m.has_last ? 1 : 0);
    run.start_last = m.has_last;
    if (m.start.size() > OpRun::kMaxStart) return false;
    run.ops.assign(list_.ops.begin() + static_cast<std::ptrdiff_t>(m.ops), list_.ops.end());
    for (sim::Op& op : run.ops) op.first_dep -= static_cast<std::uint32_t>(m.deps);
    run.deps.resize(list_.deps.size() - m.deps);
    for (std::size_t i = 0; i < run.deps.size(); ++i)
        if (!encode(list_.deps[m.deps + i], m, run.deps[i])) return false;
    run.pending.resize(pending_.size());
    for (std::size_t i = 0; i < pending_.size(); ++i)
        if (!encode(pending_[i], m, run.pending[i])) return false;
    return encode(last_compute_, m, run.last_compute);
}

void OpEmitter::replay(const OpRun& run) {
    // The start values, as mark() lists them (can_replay: as many as the run names).
    std::uint32_t start[OpRun::kMaxStart];
    std::copy(pending_.begin(), pending_.end(), start);
    if (last_compute_ != kNoOp) start[pending_.size()] = last_compute_;
    const auto first = static_cast<std::uint32_t>(list_.ops.size());
    const auto first_dep = static_cast<std::uint32_t>(list_.deps.size());
    list_.ops.insert(list_.ops.end(), run.ops.begin(), run.ops.end());
    for (auto op = list_.ops.begin() + first; op != list_.ops.end(); ++op) op->first_dep += first_dep;
    list_.deps.resize(first_dep + run.deps.size());
    std::uint32_t* deps = list_.deps.data() + first_dep;
    for (const std::uint32_t code : run.deps) *deps++ = decode(code, first, start);
    pending_.clear();
    for (const std::uint32_t code : run.pending) pending_.push_back(decode(code, first, start));
    last_compute_ = decode(run.last_compute, first, start);
}

sim::Op gemm_op(std::uint32_t label, const sim::GemmShape& g, sim::OpCategory cat, double act_bytes) {
    sim::Op op;
    op.kind = g.batch > 1 ? sim::OpKind::BatchedGemm : sim::OpKind::Gemm;
    op.category = cat;
    op.label = label;
    op.shape = sim::PackedGemmShape::of(g);
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
