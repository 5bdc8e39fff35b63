// The execution plan of a program on real devices: what each rank enqueues, on which stream, after
// which cross-stream waits, on which communicator, with which buffers. Plain C++ (no CUDA), so that
// every property the GPU executor relies on is tested on a machine without a GPU.
//
// Host issue order is the OpList order. Dependencies point to earlier ops, so the event an op
// waits for has always been recorded before the wait is enqueued (cudaStreamWaitEvent waits for
// the most recent record of an event: a wait enqueued before its record would wait for nothing).
// An op waits only for the latest dependency on each other stream: a stream runs in order, so the
// earlier ones are finished too (the same reduction as sim/op_list_index).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "calibrate/cuda/kernel_bytes.hpp"
#include "sim/program.hpp"
#include "strategies/program_streams.hpp"

namespace cuboid::validate {

inline constexpr std::uint32_t kIterationEnd = std::numeric_limits<std::uint32_t>::max();

// A device allocation: made when op `alloc_op` starts, released when op `free_op` ends
// (kIterationEnd: at the end of the iteration). An op's memory_alloc is split into pieces wherever
// later memory_free amounts cut it, so that the bytes live after every op equal the program's.
struct Piece {
    std::uint32_t alloc_op = 0;
    std::uint32_t free_op = kIterationEnd;
    double bytes = 0.0;
};

struct PlannedOp {
    std::uint32_t op = 0;                  // index in the OpList
    sim::StreamId stream = stream::kCompute;
    std::vector<std::uint32_t> waits;      // ops on other streams this op waits for (latest per stream)
    bool records_event = false;            // some op on another stream waits for this one
    std::vector<std::uint32_t> allocs;     // pieces allocated (stream-ordered) before the op
    std::vector<std::uint32_t> frees;      // pieces released (stream-ordered) after the op
    // A pass of the optimizer step over the gradients (gradient norm, unscale, zeroing): it
    // streams through the resident state in place, as in training, instead of working buffers
    // (for a 3.6B model those would be 14 GB each).
    bool on_resident_state = false;
};

// What ranks sharing an OpList share: the per-op plan and the buffers.
struct ListPlan {
    std::vector<PlannedOp> ops;  // in host issue order (= OpList order)
    std::vector<Piece> pieces;
    double resident_bytes = 0.0;
    double peak_live_bytes = 0.0;  // highest sum of live pieces (activations, messages)
    // Working buffers the executor allocates once: operands of the largest GEMM (A = m x k,
    // B = k x n, D = m x n, all batches, at the op's precision), the largest memory-bound op (an
    // optimizer step that runs in place, optimizer_in_place below, needs none) and the largest
    // communication buffer.
    double gemm_a_bytes = 0.0, gemm_b_bytes = 0.0, gemm_d_bytes = 0.0;
    double memory_op_bytes = 0.0;
    double comm_bytes = 0.0;
};

// The optimizer step (Adam, mixed precision) runs in place on the resident state, as in training:
// its fp32 weights, gradients and two moments are read and three of them written back
// (calibrate/cuda/kernel_bytes.hpp: 28 bytes moved, 16 held per parameter), so an op that moves B
// bytes updates B / 28 parameters and needs 16 B / 28 bytes of resident state. When the state is smaller (a program whose resident bytes do
// not hold it), the step runs on the working buffers instead.
inline bool optimizer_in_place(double moved_bytes, double resident_bytes) {
    namespace kb = calibrate::kernel_bytes;
    return moved_bytes / kb::kAdam * kb::kAdamState <= resident_bytes;
}

// One communication call of a rank.
struct CommCall {
    std::uint32_t op = 0;            // index in the OpList
    std::uint32_t communicator = 0;  // index into RankPlan::communicators
    std::uint32_t instance = 0;      // the k-th call this rank issues on that communicator
    std::int32_t peer = -1;          // Send / Recv: the partner's position in the group; RingExchange: this rank's
};

struct RankPlan {
    std::uint32_t rank = 0;
    std::uint32_t list = 0;                    // index into ExecutionPlan::lists (= op list)
    // Program groups this rank is a member of and calls on, ascending. Every rank creates its
    // communicators in this order: communicator creation blocks until all members join, and one
    // global order (the group index) leaves no cycle of ranks waiting for each other.
    std::vector<std::uint32_t> communicators;
    std::vector<CommCall> calls;               // in host issue order
};

struct ExecutionPlan {
    std::vector<ListPlan> lists;  // one per Program::op_lists
    std::vector<RankPlan> ranks;  // one per Program::ranks
};

// Throws std::logic_error on a malformed program (a dependency on a later op, a rank outside the
// group its slot names, a Send/Recv group that is not a pair).
ExecutionPlan make_execution_plan(const sim::Program& program);

// Bytes a rank holds at its peak: resident + peak live pieces (what the executor's allocations
// reproduce; working buffers, the CUDA context and communicator buffers come on top).
inline double expected_peak_bytes(const ListPlan& l) { return l.resident_bytes + l.peak_live_bytes; }

}  // namespace cuboid::validate
