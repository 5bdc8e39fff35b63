// What an execution plan will do, in words (`cuboid-validate --dry-run`): ops per kind, waits,
// collectives and expected memory per kind of rank, and the communicators. Needs no GPU.
#pragma once

#include <ostream>

#include "sim/program.hpp"
#include "validate/plan/execution_plan.hpp"

namespace cuboid::validate {

// "gemm", "layer-norm", "all-reduce", "send", ...: the names of the measured JSON and the report.
const char* op_kind_name(sim::OpKind kind);
inline constexpr int kOpKindCount = static_cast<int>(sim::OpKind::Recv) + 1;

// Working buffers one rank allocates once besides the plan's pieces (GEMM operands, the largest
// memory-bound op twice (in and out), the largest communication buffer twice (send and receive)).
double working_buffer_bytes(const ListPlan& plan);

void write_plan_summary(std::ostream& out, const sim::Program& program, const ExecutionPlan& plan);

}  // namespace cuboid::validate
