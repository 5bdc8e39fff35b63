#include "strategies/cli/search_bound.hpp"

#include <algorithm>
#include <string_view>

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
        if (sim::is_communication(op.kind) || op.stream != sim::stream::kCompute) continue;
        const double d = to_seconds(costs.durations[list][i]);
        w.busy_s += d;
        if (op.category == sim::OpCategory::Compute && is_layer_forward(program.labels[op.label]))
            w.layer_forward_s += d;
    }
    return w;
}

}  // namespace

IterationBound iteration_lower_bound(const sim::Program& program, const sim::ProgramCosts& costs,
                                     const Layout& layout) {
    // The op list of each stage: the one its first rank runs (ranks of a stage run the same work
    // up to their groups; a stage whose ranks differ is covered by taking every list below).
    std::vector<StageWork> work(program.op_lists.size());
    for (std::uint32_t l = 0; l < program.op_lists.size(); ++l) work[l] = stage_work(program, costs, l);

    IterationBound best;
    double fill = 0.0;  // fill before stage s: sum over r < s
    for (int s = 0; s < layout.pipeline; ++s) {
        const auto first_rank = layout.rank(0, 0, s);
        const StageWork& w = work[program.ranks[first_rank].op_list];
        if (fill + w.busy_s > best.total_s()) best = {w.busy_s, fill};
        // One layer, one micro-batch: the kernels of every layer are the same shapes.
        const double per_layer = w.layer_forward_s / (static_cast<double>(layout.micro_batches) *
                                                      std::max(1, layout.layers_on_stage(s)));
        fill += per_layer * layout.layers_of(s, 0);
    }
    // Ranks whose lists differ from their stage's first rank: their own work alone.
    for (const StageWork& w : work)
        if (w.busy_s > best.total_s()) best = {w.busy_s, 0.0};
    return best;
}

}  // namespace cuboid::cli
