#include "strategies/tensor_modes/tensor_mesh.hpp"

#include "strategies/tensor_modes/atp_choice.hpp"

namespace cuboid {

int integer_root(int n, int power) {
    for (int r = 1;; ++r) {
        int p = 1;
        for (int i = 0; i < power; ++i) p *= r;
        if (p == n) return r;
        if (p > n) return 0;
    }
}

TensorMesh tensor_mesh_of(const Scenario& sc, const hw::Catalog* builtin) {
    const int t = sc.parallel.tensor;
    switch (sc.parallel.tensor_mode) {
        case TensorMode::OneD: return TensorMesh::one_d(t);
        case TensorMode::TwoD: return TensorMesh::two_d(integer_root(t, 2));
        case TensorMode::ThreeD: return TensorMesh::three_d(integer_root(t, 3));
        case TensorMode::Atp: {
            const AtpChoice c = builtin ? choose_atp(sc, t, *builtin) : choose_atp(sc, t);
            return TensorMesh::atp(c.d1, c.d2, c.order == AtpOrder::Auto ? AtpOrder::ColumnFirst : c.order);
        }
    }
    return TensorMesh::one_d(t);
}

TensorMesh tensor_mesh_of(const Scenario& sc, const Layout& layout) {
    return {sc.parallel.tensor_mode, layout.tensor_mesh, layout.tensor_order};
}

}  // namespace cuboid
