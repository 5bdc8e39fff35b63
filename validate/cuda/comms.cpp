#include "validate/cuda/comms.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace cuboid::validate::gpu {

void nccl_check(ncclResult_t r, const char* call) {
    if (r != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(r));
}

ncclUniqueId FileBootstrap::id(std::uint32_t key, const std::vector<std::uint32_t>& members, std::uint32_t me) const {
    const bool root = members.at(0) == me;
    const std::filesystem::path file = std::filesystem::path(dir_) / ("comm-" + std::to_string(key) + ".id");
    ncclUniqueId id{};
    if (root) {
        CUBOID_NCCL(ncclGetUniqueId(&id));
        const std::filesystem::path tmp = file.string() + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary);
            out.write(id.internal, sizeof id.internal);
            if (!out) throw std::runtime_error("cannot write " + tmp.string());
        }
        std::filesystem::rename(tmp, file);
        return id;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!std::filesystem::exists(file)) {
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("no NCCL id in " + file.string() + " (is the first rank of the group running?)");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::ifstream in(file, std::ios::binary);
    in.read(id.internal, sizeof id.internal);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    return id;
}

Communicators::~Communicators() {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
}

void Communicators::create(const Bootstrap& boot, std::uint32_t key, const std::vector<std::uint32_t>& members,
                           std::uint32_t me) {
    int position = -1;
    for (std::size_t i = 0; i < members.size(); ++i)
        if (members[i] == me) position = static_cast<int>(i);
    if (position < 0) throw std::logic_error("a rank creates a communicator it is not a member of");
    const ncclUniqueId id = boot.id(key, members, me);
    ncclComm_t comm = nullptr;
    CUBOID_NCCL(ncclCommInitRank(&comm, static_cast<int>(members.size()), id, position));
    comms_.push_back(comm);
}

void issue(sim::OpKind kind, double bytes, int ranks, int peer, void* send, void* recv, ncclComm_t comm,
           cudaStream_t s) {
    constexpr std::size_t kElement = 2;  // bf16: activations and gradients
    const std::size_t elems = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / kElement);
    const std::size_t shard = std::max<std::size_t>(1, elems / static_cast<std::size_t>(ranks));
    switch (kind) {
        case sim::OpKind::AllReduce: CUBOID_NCCL(ncclAllReduce(send, recv, elems, ncclBfloat16, ncclSum, comm, s)); break;
        case sim::OpKind::AllGather: CUBOID_NCCL(ncclAllGather(send, recv, shard, ncclBfloat16, comm, s)); break;
        case sim::OpKind::ReduceScatter:
            CUBOID_NCCL(ncclReduceScatter(send, recv, shard, ncclBfloat16, ncclSum, comm, s));
            break;
        case sim::OpKind::Broadcast: CUBOID_NCCL(ncclBroadcast(send, recv, elems, ncclBfloat16, 0, comm, s)); break;
        case sim::OpKind::Send: CUBOID_NCCL(ncclSend(send, elems, ncclBfloat16, peer, comm, s)); break;
        case sim::OpKind::Recv: CUBOID_NCCL(ncclRecv(recv, elems, ncclBfloat16, peer, comm, s)); break;
        case sim::OpKind::AllToAll: {
            CUBOID_NCCL(ncclGroupStart());
            for (int p = 0; p < ranks; ++p) {
                const std::size_t at = static_cast<std::size_t>(p) * shard * kElement;
                CUBOID_NCCL(ncclSend(static_cast<char*>(send) + at, shard, ncclBfloat16, p, comm, s));
                CUBOID_NCCL(ncclRecv(static_cast<char*>(recv) + at, shard, ncclBfloat16, p, comm, s));
            }
            CUBOID_NCCL(ncclGroupEnd());
            break;
        }
        case sim::OpKind::RingExchange: {
            // `peer` is this rank's position in the ring: send to the next, receive from the previous.
            CUBOID_NCCL(ncclGroupStart());
            CUBOID_NCCL(ncclSend(send, elems, ncclBfloat16, (peer + 1) % ranks, comm, s));
            CUBOID_NCCL(ncclRecv(recv, elems, ncclBfloat16, (peer + ranks - 1) % ranks, comm, s));
            CUBOID_NCCL(ncclGroupEnd());
            break;
        }
        default: throw std::logic_error("issue: not a communication op");
    }
}

}  // namespace cuboid::validate::gpu
