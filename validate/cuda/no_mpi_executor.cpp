// The MPI entry of a build with the CUDA executor but without MPI: cuboid-validate started under
// mpirun says so before reaching here (validate_main.cpp).
#include "validate/cuda/gpu_executor.hpp"

namespace cuboid::validate {

bool mpi_executor_available() { return false; }

std::optional<Figures> run_under_mpi(const sim::Program&, const ExecutionPlan&, const ExecutorOptions&) {
    throw NoGpuError("this cuboid-validate was built without MPI: rebuild with libopenmpi-dev installed (CUBOID_MPI=ON)");
}

}  // namespace cuboid::validate
