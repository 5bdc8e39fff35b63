// Human-readable names of program enums, for traces, reports and error messages.
#pragma once

#include <string>
#include <string_view>

#include "sim/program.hpp"

namespace cuboid::sim {

std::string_view op_kind_name(OpKind kind);          // "gemm", "all_reduce", "send", ...
// "compute", "recompute", or "<class name>_comm" for a communication class of `program`
// ("tensor_comm"); "unknown" for a category of no class.
std::string category_name(const Program& program, OpCategory category);
// Program::stream_names[stream], or "stream N" for a stream it does not name.
std::string stream_name(const Program& program, StreamId stream);

}  // namespace cuboid::sim
