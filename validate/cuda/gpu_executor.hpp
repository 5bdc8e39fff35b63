// Runs a program on the GPUs of this machine (or of an mpirun job) and measures it. Declared in
// plain C++ so that cuboid-validate builds everywhere: without the CUDA toolkit the definition is
// a stub that says so (no_gpu_executor.cpp).
#pragma once

#include <stdexcept>
#include <string>

#include "sim/program.hpp"
#include "validate/cuda/execution_plan.hpp"
#include "validate/report/figures.hpp"

namespace cuboid::validate {

struct ExecutorOptions {
    int warmup = 3;       // untimed iterations first (cuBLASLt heuristics, NCCL connections, pool growth)
    int iterations = 20;  // timed iterations: the median is reported
    int profiled = 3;     // further iterations with an event pair around every op (per-op times)
    std::string bootstrap_dir;  // where NCCL unique ids are exchanged; empty: a fresh folder in /tmp
};

// No usable GPU, or not enough of them for the program's ranks: the message says which.
class NoGpuError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Whether this binary has the CUDA executor.
bool gpu_executor_available();

// One process per rank. Throws NoGpuError, or std::runtime_error on a CUDA / NCCL failure.
Figures run_on_gpus(const sim::Program& program, const ExecutionPlan& plan, const ExecutorOptions& options);

}  // namespace cuboid::validate
