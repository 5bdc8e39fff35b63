// Runs a program on the GPUs of this machine (or of an mpirun job) and measures it. Declared in
// plain C++ so that cuboid-validate builds everywhere: without the CUDA toolkit the definition is
// a stub that says so (no_gpu_executor.cpp).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "sim/program.hpp"
#include "validate/plan/execution_plan.hpp"
#include "validate/report/figures.hpp"

namespace cuboid::validate {

struct ExecutorOptions {
    int warmup = 3;       // untimed iterations first (cuBLASLt heuristics, NCCL connections, pool growth)
    int iterations = 20;  // timed iterations: the median is reported
    int profiled = 3;     // further iterations with an event pair around every op (per-op times)
    std::string bootstrap_dir;  // where NCCL unique ids are exchanged; empty: a fresh folder in /tmp
    int timeout_s = 600;  // the launcher kills the ranks that have not finished by then (a hang)
};

// No usable GPU, or not enough of them for the program's ranks: the message says which.
class NoGpuError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Whether this binary has the CUDA executor.
bool gpu_executor_available();

// The built-in launcher: one forked process per rank on this machine. Throws NoGpuError, or
// std::runtime_error on a CUDA / NCCL failure or when ranks do not finish within
// options.timeout_s (they are killed; the message names them).
Figures run_on_gpus(const sim::Program& program, const ExecutionPlan& plan, const ExecutorOptions& options);

// Whether this binary can run as one rank of an MPI job (built with MPI and the CUDA executor).
bool mpi_executor_available();

// This process as one rank of an MPI job (mpirun -np <program ranks>): MPI rank r runs program
// rank r on local GPU <r's rank on its node>; NCCL ids travel by MPI. Returns the figures on MPI
// rank 0 and nothing on the others. A failure on any rank prints "cuboid-validate: rank R: ..."
// and aborts the whole job (MPI_Abort): status 1 without a GPU, 2 for a wrong process count, 3
// for a CUDA / NCCL failure. Initialises and finalises MPI itself.
std::optional<Figures> run_under_mpi(const sim::Program& program, const ExecutionPlan& plan,
                                     const ExecutorOptions& options);

}  // namespace cuboid::validate
