#include "validate/plan/plan_summary.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace cuboid::validate {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "0-3, 8, 12-15"
std::string ranges(const std::vector<std::uint32_t>& ranks) {
    std::string s;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!s.empty()) s += ", ";
        s += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
        i = j + 1;
    }
    return s;
}

void write_list(std::ostream& out, const sim::Program& program, std::size_t l, const ExecutionPlan& plan,
                const std::vector<std::uint32_t>& ranks) {
    const sim::OpList& list = program.op_lists[l];
    const ListPlan& lp = plan.lists[l];
    std::array<int, kOpKindCount> count{};
    std::array<double, kOpKindCount> bytes{};
    std::size_t waits = 0, events = 0;
    for (std::size_t i = 0; i < list.ops.size(); ++i) {
        const auto k = static_cast<std::size_t>(list.ops[i].kind);
        ++count[k];
        bytes[k] += list.ops[i].bytes.value;
        waits += lp.ops[i].waits.size();
        events += lp.ops[i].records_event ? 1 : 0;
    }
    fmt::print(out, "op list {} (ranks {}): {} ops, {} cross-stream waits on {} events, {} allocations\n", l,
               ranges(ranks), list.ops.size(), waits, events, lp.pieces.size());
    std::string compute, comm;
    for (int k = 0; k < kOpKindCount; ++k) {
        if (count[std::size_t(k)] == 0) continue;
        const auto kind = static_cast<sim::OpKind>(k);
        std::string& to = sim::is_communication(kind) ? comm : compute;
        to += fmt::format("{}{} {}", to.empty() ? "" : ", ", op_kind_name(kind), count[std::size_t(k)]);
        if (sim::is_communication(kind)) to += fmt::format(" ({:.3f} GiB)", bytes[std::size_t(k)] / kGiB);
    }
    fmt::print(out, "  compute: {}\n", compute.empty() ? "none" : compute);
    fmt::print(out, "  collectives: {}\n", comm.empty() ? "none" : comm);
    fmt::print(out, "  memory per rank: resident {:.3f} GiB + peak live {:.3f} GiB = {:.3f} GiB expected; "
                    "working buffers {:.3f} GiB\n",
               lp.resident_bytes / kGiB, lp.peak_live_bytes / kGiB, expected_peak_bytes(lp) / kGiB,
               working_buffer_bytes(lp) / kGiB);
}

}  // namespace

const char* op_kind_name(sim::OpKind kind) {
    switch (kind) {
        case sim::OpKind::Gemm: return "gemm";
        case sim::OpKind::BatchedGemm: return "batched-gemm";
        case sim::OpKind::FusedAttention: return "fused-attention";
        case sim::OpKind::FusedAttentionBackward: return "fused-attention-backward";
        case sim::OpKind::LayerNorm: return "layer-norm";
        case sim::OpKind::Softmax: return "softmax";
        case sim::OpKind::Activation: return "activation";
        case sim::OpKind::Dropout: return "dropout";
        case sim::OpKind::Elementwise: return "elementwise";
        case sim::OpKind::Embedding: return "embedding";
        case sim::OpKind::CrossEntropy: return "cross-entropy";
        case sim::OpKind::Optimizer: return "optimizer";
        case sim::OpKind::HostDispatch: return "host-dispatch";
        case sim::OpKind::AllReduce: return "all-reduce";
        case sim::OpKind::AllGather: return "all-gather";
        case sim::OpKind::ReduceScatter: return "reduce-scatter";
        case sim::OpKind::Broadcast: return "broadcast";
        case sim::OpKind::AllToAll: return "all-to-all";
        case sim::OpKind::Send: return "send";
        case sim::OpKind::Recv: return "recv";
        case sim::OpKind::RingExchange: return "ring-exchange";
        case sim::OpKind::DeviceToHost: return "device-to-host";
        case sim::OpKind::HostOptimizer: return "host-optimizer";
        case sim::OpKind::HostToDevice: return "host-to-device";
    }
    return "unknown";
}

double working_buffer_bytes(const ListPlan& p) {
    return p.gemm_a_bytes + p.gemm_b_bytes + p.gemm_d_bytes + 2.0 * p.memory_op_bytes + 2.0 * p.comm_bytes;
}

void write_plan_summary(std::ostream& out, const sim::Program& program, const ExecutionPlan& plan) {
    std::map<std::uint32_t, std::vector<std::uint32_t>> ranks_of_list;
    std::size_t most_comms = 0, calls = 0;
    std::vector<bool> used(program.groups.size(), false);
    for (const RankPlan& r : plan.ranks) {
        for (std::uint32_t g : r.communicators) used[g] = true;
        ranks_of_list[r.list].push_back(r.rank);
        most_comms = std::max(most_comms, r.communicators.size());
        calls += r.calls.size();
    }
    fmt::print(out, "execution plan: {} ranks, {} op lists, {} communicators (at most {} per rank), "
                    "{} communication calls in all\n",
               plan.ranks.size(), plan.lists.size(), std::count(used.begin(), used.end(), true), most_comms, calls);
    for (const auto& [l, ranks] : ranks_of_list) write_list(out, program, l, plan, ranks);
}

}  // namespace cuboid::validate
