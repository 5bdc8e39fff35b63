// The executor of a build without the CUDA toolkit: cuboid-validate still predicts, reads
// measured files and prints plans.
#include "validate/cuda/gpu_executor.hpp"

namespace cuboid::validate {

bool gpu_executor_available() { return false; }

Figures run_on_gpus(const sim::Program&, const ExecutionPlan&, const ExecutorOptions&) {
    throw NoGpuError("this cuboid-validate was built without CUDA (no nvcc found at configure time); "
                     "use --measured FILE or --dry-run, or rebuild with CUBOID_CUDA=ON");
}

bool mpi_executor_available() { return false; }

std::optional<Figures> run_under_mpi(const sim::Program&, const ExecutionPlan&, const ExecutorOptions&) {
    throw NoGpuError("this cuboid-validate was built without CUDA: it cannot run as an MPI rank");
}

}  // namespace cuboid::validate
