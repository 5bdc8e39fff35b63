#include "validate/plan/execution_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cuboid::validate {
namespace {

// Cross-stream waits: per op, the latest dependency on each other stream not already covered by
// an earlier wait of the same stream (a stream runs in order, so that wait still holds).
void plan_waits(const sim::OpList& list, ListPlan& plan) {
    constexpr std::uint32_t kNone = kIterationEnd;
    std::array<std::array<std::uint32_t, 8>, 8> covered{};
    for (auto& row : covered) row.fill(kNone);
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const sim::Op& op = list.ops[i];
        if (op.stream >= 8) throw std::logic_error("op " + std::to_string(i) + ": stream id above 7");
        std::array<std::uint32_t, 8> latest;
        latest.fill(kNone);
        for (std::uint32_t d = op.first_dep; d < op.first_dep + op.dep_count; ++d) {
            const std::uint32_t dep = list.deps[d];
            if (dep >= i) throw std::logic_error("op " + std::to_string(i) + " depends on a later op " + std::to_string(dep));
            const sim::StreamId s = list.ops[dep].stream;
            if (s == op.stream) continue;
            if (latest[s] == kNone || dep > latest[s]) latest[s] = dep;
        }
        PlannedOp& p = plan.ops[i];
        for (std::size_t s = 0; s < latest.size(); ++s) {
            const std::uint32_t dep = latest[s];
            auto& cover = covered[op.stream][s];
            if (dep == kNone || (cover != kNone && dep <= cover)) continue;
            cover = dep;
            p.waits.push_back(dep);
            plan.ops[dep].records_event = true;
        }
    }
}

// Allocations as pieces. A free releases the most recent live pieces first (the choice changes
// which buffer is released, never how many bytes are live); a piece cut by a free is split in two,
// both allocated by the same op.
void plan_pieces(const sim::OpList& list, ListPlan& plan) {
    constexpr double kByte = 1.0;  // amounts below one byte are rounding of the program's sums
    std::vector<std::uint32_t> live;  // stack of piece indices
    double live_bytes = 0.0;
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const sim::Op& op = list.ops[i];
        if (op.memory_alloc.value >= kByte) {
            plan.pieces.push_back({i, kIterationEnd, op.memory_alloc.value});
            live.push_back(static_cast<std::uint32_t>(plan.pieces.size() - 1));
            live_bytes += op.memory_alloc.value;
        }
        plan.peak_live_bytes = std::max(plan.peak_live_bytes, live_bytes);
        double to_free = op.memory_free.value;
        while (to_free >= kByte && !live.empty()) {
            Piece& top = plan.pieces[live.back()];
            if (top.bytes > to_free + kByte) {  // cut: the freed part becomes its own piece
                top.bytes -= to_free;
                plan.pieces.push_back({top.alloc_op, i, to_free});
                live_bytes -= to_free;
                to_free = 0.0;
            } else {
                top.free_op = i;
                to_free -= top.bytes;
                live_bytes -= top.bytes;
                live.pop_back();
            }
        }
    }
    for (std::uint32_t p = 0; p < plan.pieces.size(); ++p) {
        plan.ops[plan.pieces[p].alloc_op].allocs.push_back(p);
        if (plan.pieces[p].free_op != kIterationEnd) plan.ops[plan.pieces[p].free_op].frees.push_back(p);
    }
}

void plan_buffers(const sim::OpList& list, ListPlan& plan) {
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const sim::Op& op = list.ops[i];
        const double bytes = op.bytes.value;
        if (plan.ops[i].on_resident_state) continue;
        if (sim::is_communication(op.kind)) {
            plan.comm_bytes = std::max(plan.comm_bytes, bytes);
        } else if (sim::is_gemm(op.kind)) {
            const double e = sim::bytes_per_element(op.precision), b = double(op.shape.batch);
            const auto& g = op.shape;
            plan.gemm_a_bytes = std::max(plan.gemm_a_bytes, e * double(g.m) * double(g.k) * b);
            plan.gemm_b_bytes = std::max(plan.gemm_b_bytes, e * double(g.k) * double(g.n) * b);
            const double out = op.precision == sim::Precision::Fp8 ? 2.0 : e;  // fp8 GEMMs write bf16
            plan.gemm_d_bytes = std::max(plan.gemm_d_bytes, out * double(g.m) * double(g.n) * b);
        } else if (!(op.kind == sim::OpKind::Optimizer && optimizer_in_place(bytes, plan.resident_bytes))) {
            plan.memory_op_bytes = std::max(plan.memory_op_bytes, bytes);
        }
    }
}

// The optimizer step's passes besides Adam (strategies/labels.hpp: "optimizer.grad_norm", ...),
// run as one streaming copy in place: B bytes moved touch B / 2 bytes of state.
bool optimizer_pass_in_place(const sim::Program& program, const sim::Op& op, double resident_bytes) {
    return op.kind == sim::OpKind::Elementwise && op.label < program.labels.size() &&
           program.labels[op.label].starts_with("optimizer.") &&
           op.bytes.value / 2.0 <= resident_bytes;
}

ListPlan plan_list(const sim::Program& program, const sim::OpList& list) {
    ListPlan plan;
    plan.ops.resize(list.ops.size());
    plan.resident_bytes = list.resident.value;
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        plan.ops[i].op = i;
        plan.ops[i].stream = list.ops[i].stream;
        plan.ops[i].on_resident_state = optimizer_pass_in_place(program, list.ops[i], plan.resident_bytes);
    }
    plan_waits(list, plan);
    plan_pieces(list, plan);
    plan_buffers(list, plan);
    return plan;
}

std::uint32_t position_in(const sim::Group& g, std::uint32_t rank) {
    const auto it = std::find(g.ranks.begin(), g.ranks.end(), rank);
    if (it == g.ranks.end()) throw std::logic_error("rank " + std::to_string(rank) + " is not in the group its slot names");
    return static_cast<std::uint32_t>(it - g.ranks.begin());
}

RankPlan plan_rank(const sim::Program& program, std::uint32_t rank) {
    const sim::RankProgram& rp = program.ranks[rank];
    const sim::OpList& list = program.op_lists[rp.op_list];
    RankPlan plan;
    plan.rank = rank;
    plan.list = rp.op_list;
    auto group_of = [&](const sim::Op& op) {
        if (op.group_slot >= rp.groups.size()) throw std::logic_error("unknown group slot " + std::to_string(op.group_slot));
        return rp.groups[op.group_slot];
    };
    for (const sim::Op& op : list.ops)
        if (sim::is_communication(op.kind)) plan.communicators.push_back(group_of(op));
    std::sort(plan.communicators.begin(), plan.communicators.end());
    plan.communicators.erase(std::unique(plan.communicators.begin(), plan.communicators.end()), plan.communicators.end());
    std::vector<std::uint32_t> issued(plan.communicators.size(), 0);
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const sim::Op& op = list.ops[i];
        if (!sim::is_communication(op.kind)) continue;
        const std::uint32_t g = group_of(op);
        const sim::Group& group = program.groups[g];
        const std::uint32_t me = position_in(group, rank);
        const auto c = static_cast<std::uint32_t>(
            std::lower_bound(plan.communicators.begin(), plan.communicators.end(), g) - plan.communicators.begin());
        CommCall call{i, c, issued[c]++, -1};
        if (op.kind == sim::OpKind::Send || op.kind == sim::OpKind::Recv) {
            if (group.ranks.size() != 2) throw std::logic_error("a Send/Recv group must have 2 ranks");
            call.peer = static_cast<std::int32_t>(1 - me);
        }
        if (op.kind == sim::OpKind::RingExchange) call.peer = static_cast<std::int32_t>(me);
        plan.calls.push_back(call);
    }
    return plan;
}

}  // namespace

ExecutionPlan make_execution_plan(const sim::Program& program) {
    // The host's Adam and its copies are priced, not run: the GPU executor has no host optimizer.
    for (const sim::OpList& list : program.op_lists)
        for (const sim::Op& op : list.ops)
            if (sim::is_host_offload(op.kind))
                throw std::invalid_argument("GPU validation does not run an optimizer offloaded to the host "
                                            "(training.optimizer_offload); validate the plan without it");
    ExecutionPlan plan;
    for (const sim::OpList& list : program.op_lists) plan.lists.push_back(plan_list(program, list));
    for (std::uint32_t r = 0; r < program.ranks.size(); ++r) plan.ranks.push_back(plan_rank(program, r));
    return plan;
}

}  // namespace cuboid::validate
