// The CPU executor: runs the math of a program built by strategies (the very program the
// simulator executes) with one thread per rank, Eigen for the kernels and real data exchange
// between threads for every communication op, then assembles the loss, the gradients and the
// updated weights of the whole model from the ranks' shards. Compared with reference_step() on
// the same weights and batch, this proves a strategy's program computes the right thing and
// does not deadlock.
//
// Scope: GPT style models; Megatron 1d tensor parallelism (with or without sequence
// parallelism, with or without overlap_chunks sub-batches), and the 2d (summa_exec.cpp), 3d
// (cube_exec.cpp) and atp (atp_exec.cpp) tensor modes (atp without its chunks); every pipeline
// schedule and recompute policy; data parallelism with all-reduce or ZeRO 1/2/3; context
// parallelism in every mode (context_exec.cpp); mixture-of-experts layers (moe_exec.cpp) with
// expert and expert-tensor parallelism, shared experts, dense leading layers and the expert
// gradients reduced over the expert-data group, within what strategies accepts for them (1d
// tensor parallelism under sequence parallelism, ZeRO 0-2, schedules that do not split the
// backward, one sub-batch). Dropout is the identity, the step is SGD, the output layer is tied to the word
// embedding, the MLPs are GeLU with biases (see tiny_gpt.hpp).
//
// Every exchange is an op of the program: the executor does no communication of its own (the
// row-partial LayerNorm / bias gradients are summed by the program's tp.grad_allreduce, the 2d/3d
// final LayerNorm by its statistic all-reduces, ATP's ends by its hidden-axis gathers, the tied
// embedding's two copies by the first/last-stage emb.grad_allreduce, the routed token copies by
// the expert all-to-alls and expert-tensor collectives).
#pragma once

#include <chrono>
#include <string>

#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "validate/cpu/reference.hpp"
#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

struct ExecutorOptions {
    double learning_rate = 0.1;
    std::chrono::milliseconds timeout{10000};  // a wait longer than this is a deadlock
};

struct Execution {
    std::string error;           // empty: every rank ran its whole program
    double loss = 0.0;           // mean cross-entropy over the global batch
    GptParams grads;             // assembled over tensor shards, data-parallel owners and stages
    GptParams weights;           // after the optimizer step, as data-parallel replica 0 holds them
    double recompute_diff = 0.0; // largest difference between a recomputed and the first activation
    bool ok() const { return error.empty(); }
};

// `scenario` and `layout` are those `program` was built from; `batch` holds global_batch sequences.
Execution execute_program(const Scenario& scenario, const Layout& layout, const TaggedProgram& program,
                          const GptParams& params, const Batch& batch, const ExecutorOptions& options = {});

struct Agreement {
    double loss = 0.0;       // relative error of the loss
    double grads = 0.0;      // worst relative error of a gradient tensor (max abs diff / max abs)
    double weights = 0.0;    // same for the updated weights against params - lr * reference grads
    std::string worst;       // the gradient tensor with the worst error
    double worst_of() const { return std::max(loss, std::max(grads, weights)); }
};

Agreement compare(const Execution& run, const Reference& ref, const GptParams& params, double learning_rate);

}  // namespace cuboid::cpu
