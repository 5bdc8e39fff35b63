#include "strategies/tensor_modes/tensor_mesh.hpp"

#include "strategies/tensor_modes/tensor_mode_kinds.hpp"

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
    return tensor_mode_kind(sc.parallel.tensor_mode).mesh(sc, builtin);
}

TensorMesh tensor_mesh_of(const Scenario& sc, const Layout& layout) {
    return {sc.parallel.tensor_mode, layout.tensor_mesh, layout.tensor_order};
}

}  // namespace cuboid
