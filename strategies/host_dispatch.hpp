// The host thread that issues a rank's GPU ops, as a program transformation.
//
// Each rank's framework runs one host thread that issues the ops of its OpList in order (the
// OpList is in issue order); issuing an op takes host time (profile `host:` section), and a GPU
// stream cannot start an op before it has been issued. The host runs ahead of the GPU (CUDA is
// asynchronous) except at the synchronising points of hw::HostDispatchCosts, where it waits for
// every op issued so far (a device synchronisation).
//
// As a program: a HostDispatch op on stream::kHost before every GPU op, the GPU op depending on
// it. Host ops run one after the other on their stream, so the k-th GPU op can start no earlier
// than k dispatch times after the iteration start: with GPU time g per op and dispatch time h, a
// chain of n ops takes about n*max(g, h) + min(g, h). The engine needs no change.
#pragma once

#include "hardware_models/hardware.hpp"
#include "hardware_models/profile_host.hpp"
#include "sim/program.hpp"

namespace cuboid {

// `program` with a HostDispatch op before each of its ops; labels, groups and ranks unchanged.
sim::Program with_host_dispatch(sim::Program program, const hw::HostDispatchCosts& host);

// with_host_dispatch when the cluster's profile has a `host:` section, else `program` unchanged.
sim::Program with_host_dispatch(sim::Program program, const hw::Hardware& hardware);

}  // namespace cuboid
