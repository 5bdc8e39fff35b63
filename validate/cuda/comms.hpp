// NCCL for the executor: communicators bootstrapped through a shared folder, and the calls of the
// program's communication ops. C++20 host code (nccl.h is a C header).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/program.hpp"

namespace cuboid::validate::gpu {

void nccl_check(ncclResult_t r, const char* call);
#define CUBOID_NCCL(call) ::cuboid::validate::gpu::nccl_check((call), #call)

// How the members of a group agree on its ncclUniqueId: the group's first member makes it and the
// others receive it. `members` are program ranks in ring order, `members[0]` the first. Every rank
// asks for its groups' ids in ascending key order.
class Bootstrap {
public:
    virtual ~Bootstrap() = default;
    virtual ncclUniqueId id(std::uint32_t key, const std::vector<std::uint32_t>& members, std::uint32_t me) const = 0;
};

// Exchanges ncclUniqueIds through files in a folder every rank sees (one machine, or a shared file
// system): the group's first rank writes `comm-<key>.id` (to a temporary name, then renamed, so a
// reader never sees half a file); the others wait for it.
class FileBootstrap : public Bootstrap {
public:
    explicit FileBootstrap(std::string dir, std::chrono::seconds timeout = std::chrono::seconds(300))
        : dir_(std::move(dir)), timeout_(timeout) {}
    ncclUniqueId id(std::uint32_t key, const std::vector<std::uint32_t>& members, std::uint32_t me) const override;

private:
    std::string dir_;
    std::chrono::seconds timeout_;
};

// Communicators of one rank, one per key, created in ascending key order (ncclCommInitRank blocks
// until every member joins; one global order leaves no cycle of waiting ranks).
class Communicators {
public:
    Communicators() = default;
    ~Communicators();
    Communicators(const Communicators&) = delete;
    Communicators& operator=(const Communicators&) = delete;
    // `members` in ring order; `me` is this process's rank.
    void create(const Bootstrap& boot, std::uint32_t key, const std::vector<std::uint32_t>& members, std::uint32_t me);
    ncclComm_t at(std::size_t i) const { return comms_.at(i); }

private:
    std::vector<ncclComm_t> comms_;
};

// One communication op as NCCL calls, bf16 elements, on `stream`. Sizes follow
// hardware_models/collectives.hpp: `bytes` is one rank's buffer, except all-gather and
// reduce-scatter (the full buffer, P shards); all-to-all sends bytes/P to every peer.
void issue(sim::OpKind kind, double bytes, int ranks, int peer, void* send, void* recv, ncclComm_t comm,
           cudaStream_t stream);

}  // namespace cuboid::validate::gpu
