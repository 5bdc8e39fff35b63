#include "strategies/cli/search_bound.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <tuple>

#include "strategies/program_streams.hpp"

namespace cuboid::cli {
namespace {

// A forward kernel of a transformer layer: "F.<kernel>" of category compute, excluding the
// embedding and the head (which only the first and last chunks run) and the tensor collectives.
bool is_layer_forward(std::string_view label) {
    if (!label.starts_with("F.")) return false;
    for (std::string_view edge : {"F.embed", "F.embed_dropout", "F.final_ln", "F.logits", "F.xent"})
        if (label == edge) return false;
    return label.find(".tp.") == std::string_view::npos;
}

struct StageWork {
    double busy_s = 0.0;          // compute-stream compute ops
    double layer_forward_s = 0.0;  // the layer forward kernels of all micro-batches and chunks
};

StageWork stage_work(const sim::Program& program, const sim::ProgramCosts& costs, std::uint32_t list) {
    StageWork w;
    const auto& ops = program.op_lists[list].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const sim::Op& op = ops[i];
        if (sim::is_communication(op.kind) || op.stream != stream::kCompute) continue;
        const double d = to_seconds(costs.durations[list][i]);
        w.busy_s += d;
        if (op.category == sim::OpCategory::Compute && is_layer_forward(program.labels[op.label]))
            w.layer_forward_s += d;
    }
    return w;
}

// Collectives of one rank priced once per (group, kind, size): a rank issues the same few
// collectives on each of its groups again and again.
class CollectiveTimes {
public:
    CollectiveTimes(const sim::Program& program, const CollectiveLowerBound& bound) : program_(program), bound_(bound) {}

    Time of(const sim::Op& op, const sim::RankProgram& rank) {
        // Point-to-point and broadcasts stay at zero (their source is not needed to bound them so).
        if (!bound_ || op.kind == sim::OpKind::Send || op.kind == sim::OpKind::Recv ||
            op.kind == sim::OpKind::Broadcast || op.group_slot >= rank.groups.size())
            return Time{0};
        const std::uint32_t group = rank.groups[op.group_slot];
        if (program_.groups[group].ranks.size() < 2) return Time{0};
        const auto key = std::make_tuple(group, op.kind, op.bytes.value);
        const auto it = times_.find(key);
        if (it != times_.end()) return it->second;
        return times_.emplace(key, bound_(op.kind, op.bytes, group)).first->second;
    }

private:
    const sim::Program& program_;
    const CollectiveLowerBound& bound_;
    std::map<std::tuple<std::uint32_t, sim::OpKind, double>, Time> times_;
};

// The longest chain of one rank's ops through dependencies and stream order (see the header),
// its first compute-stream compute op released at `fill`.
Time critical_path(const sim::Program& program, const sim::ProgramCosts& costs, std::uint32_t rank_index,
                        Time fill, CollectiveTimes& collectives) {
    const sim::RankProgram& rank = program.ranks[rank_index];
    const sim::OpList& list = program.op_lists[rank.op_list];
    const auto& durations = costs.durations[rank.op_list];
    std::vector<Time> end(list.ops.size(), Time{0});
    std::array<Time, 256> stream_free{};  // StreamId is 8 bits
    bool released = false;
    Time finish{0};
    for (std::size_t i = 0; i < list.ops.size(); ++i) {
        const sim::Op& op = list.ops[i];
        Time start = stream_free[op.stream];
        for (std::uint32_t d = op.first_dep; d < op.first_dep + op.dep_count; ++d)
            start = std::max(start, end[list.deps[d]]);
        const bool comm = sim::is_communication(op.kind);
        if (!comm && op.stream == stream::kCompute && !released) {
            start = std::max(start, fill);
            released = true;
        }
        end[i] = start + (comm ? collectives.of(op, rank) : durations[i]);
        stream_free[op.stream] = end[i];
        finish = std::max(finish, end[i]);
    }
    return finish;
}

}  // namespace

IterationBound iteration_lower_bound(const sim::Program& program, const sim::ProgramCosts& costs,
                                     const Layout& layout, const CollectiveLowerBound& collective) {
    // The op list of each stage: the one its first rank runs (ranks of a stage run the same work
    // up to their groups; a stage whose ranks differ is covered by taking every list below).
    std::vector<StageWork> work(program.op_lists.size());
    for (std::uint32_t l = 0; l < program.op_lists.size(); ++l) work[l] = stage_work(program, costs, l);

    IterationBound best;
    CollectiveTimes collectives(program, collective);
    std::vector<bool> list_seen(program.op_lists.size(), false);
    double fill = 0.0;  // fill before stage s: sum over r < s
    for (int s = 0; s < layout.pipeline; ++s) {
        const auto first_rank = static_cast<std::uint32_t>(layout.rank(0, 0, s));
        const std::uint32_t list = program.ranks[first_rank].op_list;
        const StageWork& w = work[list];
        if (fill + w.busy_s > best.compute_s + best.fill_s) std::tie(best.compute_s, best.fill_s) = std::tie(w.busy_s, fill);
        // The fill in ticks rounded down, so that it stays below the seconds it bounds.
        const Time fill_ticks{static_cast<std::int64_t>(fill * static_cast<double>(kPicosecondsPerSecond))};
        best.critical_path_s = std::max(best.critical_path_s,
                                        to_seconds(critical_path(program, costs, first_rank, fill_ticks, collectives)));
        list_seen[list] = true;
        // One layer, one micro-batch: the kernels of every layer are the same shapes.
        const double per_layer = w.layer_forward_s / (static_cast<double>(layout.micro_batches) *
                                                      std::max(1, layout.layers_on_stage(s)));
        fill += per_layer * layout.layers_of(s, 0);
    }
    // Ranks whose lists differ from their stage's first rank: their own work alone.
    for (const StageWork& w : work)
        if (w.busy_s > best.compute_s + best.fill_s) std::tie(best.compute_s, best.fill_s) = std::make_tuple(w.busy_s, 0.0);
    for (std::uint32_t r = 0; r < program.ranks.size(); ++r) {
        const std::uint32_t list = program.ranks[r].op_list;
        if (list_seen[list]) continue;
        list_seen[list] = true;
        best.critical_path_s =
            std::max(best.critical_path_s, to_seconds(critical_path(program, costs, r, Time{0}, collectives)));
    }
    return best;
}

}  // namespace cuboid::cli
