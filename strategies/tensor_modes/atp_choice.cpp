#include "strategies/tensor_modes/atp_choice.hpp"

#include <fmt/format.h>

#include "strategies/layer_shapes.hpp"

namespace cuboid {
namespace {

// The ranks of every group along `axis` of every tensor group of the cluster. Tensor groups are
// `tensor` consecutive ranks (strategies/layout.hpp); on the mesh, axis 0 (d1) is the fastest.
std::vector<std::vector<std::uint32_t>> axis_groups(int gpus, int d1, int d2, int axis) {
    const int tensor = d1 * d2;
    const int size = axis == 0 ? d1 : d2, stride = axis == 0 ? 1 : d1, count = axis == 0 ? d2 : d1;
    std::vector<std::vector<std::uint32_t>> groups;
    for (int base = 0; base + tensor <= gpus; base += tensor)
        for (int other = 0; other < count; ++other) {
            auto& g = groups.emplace_back();
            const int first = base + (axis == 0 ? other * d1 : other);
            for (int c = 0; c < size; ++c) g.push_back(static_cast<std::uint32_t>(first + c * stride));
        }
    return groups;
}

// Seconds of `sizes` ring all-reduces (bytes each) over the groups of one axis of size g.
double axis_seconds(const CommMatrix& m, int gpus, int d1, int d2, int axis, const std::vector<double>& sizes) {
    const int g = axis == 0 ? d1 : d2;
    if (g == 1) return 0.0;
    const auto groups = axis_groups(gpus, d1, d2, axis);
    const RingShare share = concurrent_ring_share(m, groups);
    // NCCL ring all-reduce: 2(g-1) steps, each moving 1/g of the buffer (seed_algorithms §3.3).
    const double alpha = to_seconds(share.allreduce_latency);
    double total = 0.0;
    for (double bytes : sizes) total += alpha + 2.0 * (g - 1) / g * bytes / share.bandwidth.value;
    return total;
}

}  // namespace

const char* atp_order_name(AtpOrder order) {
    switch (order) {
        case AtpOrder::ColumnFirst: return "column-first";
        case AtpOrder::RowFirst: return "row-first";
        case AtpOrder::Auto: return "auto";
    }
    return "auto";
}

double atp_layer_comm_seconds(const Scenario& sc, const CommMatrix& m, int d1, int d2, AtpOrder order) {
    const LayerDims d = LayerDims::make(sc.model, sc.training.micro_batch, 1, false, sc.training.precision);
    const double bs = static_cast<double>(d.tokens()) * d.act_bytes;
    // c: the axis that splits W1's columns (heads, MLP inner dimension); r: the hidden-size axis.
    const int c_axis = order == AtpOrder::RowFirst ? 1 : 0, r_axis = 1 - c_axis;
    const double dc = c_axis == 0 ? d1 : d2, dr = c_axis == 0 ? d2 : d1;
    const auto h = static_cast<double>(d.h);
    // Over r: W1's partial outputs in forward (QKV, FC1) and, in backward, the input gradients of
    // the projection and of FC2 (partial over W2's hidden-split output): [bs, width / dc] each.
    const std::vector<double> over_r{bs * static_cast<double>(d.qkv_width()) / dc,
                                     bs * static_cast<double>(d.fc1_width()) / dc, bs * h / dc,
                                     bs * static_cast<double>(d.ffn) / dc};
    // Over c: W2's partial outputs in forward (projection, FC2) and the input gradients of QKV
    // and FC1 in backward: [bs, h / dr] each, Megatron's four all-reduces when dr = 1.
    const std::vector<double> over_c(4, bs * h / dr);
    // LayerNorm on the hidden-split activation: per-token sum and sum of squares (fp32), two
    // norms, forward and backward; latency-bound.
    const std::vector<double> norms(4, static_cast<double>(d.tokens()) * 2.0 * 4.0);
    return axis_seconds(m, m.gpus, d1, d2, r_axis, over_r) + axis_seconds(m, m.gpus, d1, d2, c_axis, over_c) +
           axis_seconds(m, m.gpus, d1, d2, r_axis, norms);
}

std::vector<AtpCandidate> atp_candidates(const Scenario& sc, int tensor, const CommMatrix& m) {
    const auto& given = sc.parallel.atp_mesh;
    const bool mesh_given = given[0] > 0 && given[1] > 0;
    if (mesh_given && given[0] * given[1] != tensor)
        throw InputError(sc.where("parallel.atp_mesh"),
                         fmt::format("{} x {} is not the tensor degree {}", given[0], given[1], tensor));
    std::vector<AtpCandidate> out;
    // Largest d1 first: (t, 1) column-first, Megatron 1D, wins ties.
    for (int d1 = tensor; d1 >= 1; --d1) {
        if (tensor % d1 != 0) continue;
        const int d2 = tensor / d1;
        if (mesh_given && (d1 != given[0] || d2 != given[1])) continue;
        for (AtpOrder order : {AtpOrder::ColumnFirst, AtpOrder::RowFirst}) {
            if (sc.parallel.atp_order != AtpOrder::Auto && order != sc.parallel.atp_order) continue;
            out.push_back({d1, d2, order, atp_layer_comm_seconds(sc, m, d1, d2, order)});
        }
    }
    return out;
}

AtpChoice choose_atp(const Scenario& scenario, int tensor, const hw::Catalog& catalog) {
    const CommMatrix m = build_comm_matrix(scenario.cluster, catalog);
    const auto candidates = atp_candidates(scenario, tensor, m);
    const AtpCandidate* best = &candidates.front();
    for (const AtpCandidate& c : candidates)
        if (c.comm_cost_s < best->comm_cost_s) best = &c;
    AtpChoice choice{best->d1, best->d2, best->order, best->comm_cost_s, {}};
    choice.why = fmt::format("atp {}x{} {}: per-layer comm", best->d1, best->d2, atp_order_name(best->order));
    for (const AtpCandidate& c : candidates)
        choice.why += fmt::format(" {}x{}{} {:.3g} ms", c.d1, c.d2, c.order == AtpOrder::RowFirst ? "r" : "c",
                                  c.comm_cost_s * 1e3);
    choice.why += "; levels: " + m.describe();
    return choice;
}

AtpChoice choose_atp(const Scenario& scenario, int tensor) {
    return choose_atp(scenario, tensor, hw::Catalog::load_builtin());
}

}  // namespace cuboid
