// Human-readable names of program enums, for traces, reports and error messages.
#pragma once

#include <string_view>

#include "sim/program.hpp"

namespace cuboid::sim {

std::string_view op_kind_name(OpKind kind);          // "gemm", "all_reduce", "send", ...
std::string_view category_name(OpCategory category); // "compute", "tensor_comm", ...
std::string_view stream_name(StreamId stream);       // "compute", "tensor-comm", ...; "stream" past kCount

}  // namespace cuboid::sim
