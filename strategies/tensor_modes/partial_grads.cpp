#include "strategies/tensor_modes/partial_grads.hpp"

#include "strategies/group_slots.hpp"
#include "strategies/mla_layer.hpp"

namespace cuboid {

std::vector<PartialGradReduction> partial_grad_reductions(const LayerDims& d, int layers, bool final_norm,
                                                          int moe_layers) {
    const double h = static_cast<double>(d.h), n = layers;
    // Per layer: two LayerNorms (scale and shift; RMSNorm: scale only, no biases with SwiGLU).
    const double norms = n * (d.swiglu ? 2.0 * h : 4.0 * h) + (final_norm ? (d.swiglu ? h : 2.0 * h) : 0.0);
    const double hidden_biases = d.swiglu ? 0.0 : n * 2.0 * h;  // projection, FC2
    const double column_biases = d.swiglu ? 0.0 : n * static_cast<double>(d.qkv_width() + d.fc1_width());  // QKV, FC1
    const TensorMesh& m = d.mesh;
    if (d.t <= 1 || (layers == 0 && !final_norm)) return {};
    if (!m.own_program()) {
        if (!d.sp) return {};
        // Latent attention's down-projections and latent norms are whole on every rank, which
        // each sees its own rows of: partial sums too (mla_layer.hpp).
        // A mixture-of-experts layer's router (h x experts, whole on every rank) routes the rank's
        // own tokens under sequence parallelism: its gradient is partial too.
        const double routers = moe_layers * h * static_cast<double>(d.experts);
        if (d.mla) return {{slot::kTensor, norms + hidden_biases + n * mla_parameters(d).whole + routers}};
        return {{slot::kTensor, norms + hidden_biases + routers}};
    }
    const double q = m.q();
    switch (m.mode) {
        case TensorMode::TwoD: return {{slot::tensor_axis(1), (norms + hidden_biases + column_biases) / q}};
        case TensorMode::ThreeD: {
            const double hid = (norms + hidden_biases) / q, col = column_biases / q;
            std::vector<PartialGradReduction> r{{slot::tensor_axis(0), hid}, {slot::tensor_axis(1), hid}};
            if (col > 0.0) {
                r.push_back({slot::tensor_axis(1), col});
                r.push_back({slot::tensor_axis(2), col});
            }
            return r;
        }
        default: return {};
    }
}

}  // namespace cuboid
