// Happens-before between the streams of one op list, from its dependencies alone.
//
// An op can start only after the ops it depends on, and the ops before it on its own stream, have
// finished, and after everything those waited for. For op o let need(o)[s] be the number of ops of
// stream s that must have finished before o starts, transitively. Then op a (stream s, position
// k) finishes before b starts exactly when need(b)[s] > k, for every execution of the list.
//
// ExclusiveTransfers (sim/exclusive.hpp) asks, for a communication op, whether every op of some
// other stream is ordered with it (finishes before it starts, or starts after it finishes): then
// no instance posted from that stream can overlap the op's instance on this rank.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/op_list_index.hpp"
#include "sim/program.hpp"

namespace cuboid::sim {

// Per op of `list`: a bit per stream (other than the op's own) whose every op is ordered with it.
// Computed for communication ops; 0 for compute ops. Throws std::logic_error on a dependency on a
// later op or a stream id of 8 or more.
std::vector<StreamMask> ordered_streams(const OpList& list);
// The same from the list's index (any durations and chain merging: it reads the requirements).
std::vector<StreamMask> ordered_streams(const OpListIndex& index);

// Whether `a` and `b` agree in everything ordered_streams reads (per op its stream, whether it
// communicates, and its dependencies), so that ordered_streams(a) == ordered_streams(b): the op
// lists of the middle stages of a GPipe plan differ only in labels and sizes, and a comparison
// costs a fraction of the analysis.
bool same_order_inputs(const OpList& a, const OpList& b);

}  // namespace cuboid::sim
