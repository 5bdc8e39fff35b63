// The host thread that issues a rank's GPU ops, as a program transformation.
//
// Each rank's framework runs one host thread that issues the ops of its OpList in order (the
// OpList is in issue order); issuing an op takes host time (profile `host:` section), and a GPU
// stream cannot start an op before it has been issued. The host runs ahead of the GPU (CUDA is
// asynchronous) except at the synchronising points of hw::HostDispatchCosts, where it waits for
// every op issued so far (a device synchronisation); with several model chunks per stage, every
// op but the pipeline sends (PipelineChunks).
//
// As a program: a HostDispatch op on stream::kHost before every GPU op, the GPU op depending on
// it. Host ops run one after the other on their stream, so the k-th GPU op can start no earlier
// than k dispatch times after the iteration start: with GPU time g per op and dispatch time h, a
// chain of n ops takes about n*max(g, h) + min(g, h). The engine needs no change.
#pragma once

#include "hardware_models/hardware.hpp"
#include "hardware_models/profile_host.hpp"
#include "sim/program.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

// Model chunks per pipeline stage, which decide whether the synchronisation after a pipeline
// receive waits for the pipeline sends issued before it. Megatron-LM issues a stage's sends and
// receives in calls (batch_isend_irecv, then torch.cuda.synchronize()), so a send completes with
// the receives of its call. With one chunk a stage's op list has the calls' order (the send of
// 1F1B's send_forward_recv_backward right before its receive, the peer posting the other halves
// at the same step), and waiting for the send is what the synchronisation does. With several
// (interleaved, ZB-V) the activations go round a ring, the last stage sending to the first stage's
// next chunk, and a rank posts each receive only when that chunk's forward needs it, later than
// the call in which Megatron posts it: waiting for the send would wait, on every rank of the ring,
// for a receive that no host has issued yet. There the sends are left to their own stream, and
// each ends when its peer's receive does.
enum class PipelineChunks { One, Several };

PipelineChunks pipeline_chunks(const ParallelPlan& plan);

// `program` with a HostDispatch op before each of its ops; labels, groups and ranks unchanged.
sim::Program with_host_dispatch(sim::Program program, const hw::HostDispatchCosts& host,
                                PipelineChunks chunks = PipelineChunks::One);

// with_host_dispatch when the cluster's profile has a `host:` section, else `program` unchanged.
sim::Program with_host_dispatch(sim::Program program, const hw::Hardware& hardware,
                                PipelineChunks chunks = PipelineChunks::One);

}  // namespace cuboid
