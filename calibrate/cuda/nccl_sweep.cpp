// NCCL collectives over the GPUs of this node: one process, ncclCommInitAll, one host thread per
// GPU (each drives its communicator, as one rank of a training job does). Per size: warm-up,
// then timed trials of `iters` back-to-back calls with CUDA events; a trial's time per call is
// the slowest rank's (a collective ends when its last rank does), and the median over trials is
// kept. Sizes follow hardware_models/collectives.hpp: S is one rank's buffer, except all-gather
// and reduce-scatter (the full buffer, P shards).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <barrier>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/cuda/cuda_check.hpp"
#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/fit/stats.hpp"

#if CUBOID_HAVE_NCCL
#include <nccl.h>
#endif

namespace cuboid::calibrate {

#if CUBOID_HAVE_NCCL
namespace {

void nccl_check(ncclResult_t r, const char* call) {
    if (r != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(r));
}
#define CUBOID_NCCL(call) nccl_check((call), #call)

constexpr int kIters = 5;  // calls per timed trial

// One call of `kind` with S = bytes on `rank` of `ranks`; bf16 elements (training's gradients).
void issue(const std::string& kind, double bytes, int rank, int ranks, void* send, void* recv, ncclComm_t comm,
           cudaStream_t s) {
    const std::size_t elems = std::size_t(bytes) / 2;
    const std::size_t shard = elems / std::size_t(ranks);
    if (kind == "all-reduce") CUBOID_NCCL(ncclAllReduce(send, recv, elems, ncclBfloat16, ncclSum, comm, s));
    else if (kind == "all-gather") CUBOID_NCCL(ncclAllGather(send, recv, shard, ncclBfloat16, comm, s));
    else if (kind == "reduce-scatter")
        CUBOID_NCCL(ncclReduceScatter(send, recv, shard, ncclBfloat16, ncclSum, comm, s));
    else if (kind == "broadcast") CUBOID_NCCL(ncclBroadcast(send, recv, elems, ncclBfloat16, 0, comm, s));
    else if (kind == "send-recv") {  // rank 0 -> rank 1, one direction (a pipeline hop)
        if (rank == 0) CUBOID_NCCL(ncclSend(send, elems, ncclBfloat16, 1, comm, s));
        else CUBOID_NCCL(ncclRecv(recv, elems, ncclBfloat16, 0, comm, s));
    } else {  // all-to-all: S/P to every peer, as grouped point-to-point calls
        CUBOID_NCCL(ncclGroupStart());
        for (int peer = 0; peer < ranks; ++peer) {
            CUBOID_NCCL(ncclSend(static_cast<char*>(send) + peer * shard * 2, shard, ncclBfloat16, peer, comm, s));
            CUBOID_NCCL(ncclRecv(static_cast<char*>(recv) + peer * shard * 2, shard, ncclBfloat16, peer, comm, s));
        }
        CUBOID_NCCL(ncclGroupEnd());
    }
}

// Per-rank worker: times every (kind, size) and writes its per-trial seconds into `times`.
void rank_worker(int rank, int ranks, ncclComm_t comm, const Plan& plan, const std::vector<std::string>& kinds,
                 std::barrier<>& sync, std::vector<std::vector<double>>& times, std::string& error) {
    try {
        CUBOID_CUDA(cudaSetDevice(rank));
        cudaStream_t s = nullptr;
        CUBOID_CUDA(cudaStreamCreate(&s));
        const std::size_t largest = std::size_t(plan.collective_bytes.back());
        void *send = nullptr, *recv = nullptr;
        CUBOID_CUDA(cudaMalloc(&send, largest));
        CUBOID_CUDA(cudaMalloc(&recv, largest));
        cudaEvent_t start, stop;
        CUBOID_CUDA(cudaEventCreate(&start));
        CUBOID_CUDA(cudaEventCreate(&stop));
        std::size_t slot = 0;
        for (const auto& kind : kinds)
            for (double bytes : plan.collective_bytes) {
                auto call = [&] { issue(kind, bytes, rank, ranks, send, recv, comm, s); };
                for (int i = 0; i < plan.warmup; ++i) call();
                CUBOID_CUDA(cudaStreamSynchronize(s));
                for (int t = 0; t < plan.repeats; ++t) {
                    sync.arrive_and_wait();  // start the ranks' trials together
                    CUBOID_CUDA(cudaEventRecord(start, s));
                    for (int i = 0; i < kIters; ++i) call();
                    CUBOID_CUDA(cudaEventRecord(stop, s));
                    CUBOID_CUDA(cudaEventSynchronize(stop));
                    float ms = 0.0f;
                    CUBOID_CUDA(cudaEventElapsedTime(&ms, start, stop));
                    times[slot * std::size_t(plan.repeats) + std::size_t(t)][std::size_t(rank)] = 1e-3 * ms / kIters;
                }
                ++slot;
            }
        cudaFree(send);
        cudaFree(recv);
        cudaStreamDestroy(s);
    } catch (const std::exception& e) {
        error = e.what();
        sync.arrive_and_drop();
    }
}

void measure_group(const Plan& plan, int ranks, Measurements& out) {
    std::vector<std::string> kinds;
    for (const auto& k : plan.collectives)
        if (k != "send-recv" || ranks == 2) kinds.push_back(k);
    const auto n = static_cast<std::size_t>(ranks);
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devices(n);
    for (int r = 0; r < ranks; ++r) devices[std::size_t(r)] = r;
    CUBOID_NCCL(ncclCommInitAll(comms.data(), ranks, devices.data()));
    const std::size_t configs = kinds.size() * plan.collective_bytes.size();
    std::vector<std::vector<double>> times(configs * static_cast<std::size_t>(plan.repeats), std::vector<double>(n));
    std::vector<std::string> errors(n);
    std::barrier<> sync(ranks);
    {
        std::vector<std::jthread> threads;
        for (int r = 0; r < ranks; ++r)
            threads.emplace_back(rank_worker, r, ranks, comms[std::size_t(r)], std::cref(plan), std::cref(kinds),
                                 std::ref(sync), std::ref(times), std::ref(errors[std::size_t(r)]));
    }
    for (auto c : comms) ncclCommDestroy(c);
    for (const auto& e : errors)
        if (!e.empty()) throw std::runtime_error("NCCL on " + std::to_string(ranks) + " GPUs: " + e);
    std::size_t slot = 0;
    for (const auto& kind : kinds)
        for (double bytes : plan.collective_bytes) {
            std::vector<double> slowest;
            for (int t = 0; t < plan.repeats; ++t) {
                const auto& per_rank = times[slot * std::size_t(plan.repeats) + std::size_t(t)];
                slowest.push_back(*std::max_element(per_rank.begin(), per_rank.end()));
            }
            out.collectives.push_back({kind, ranks, bytes, median(slowest)});
            ++slot;
        }
}

}  // namespace
#endif

void measure_collectives(const Plan& plan, int device_count, Measurements& out) {
#if CUBOID_HAVE_NCCL
    int version = 0;
    if (ncclGetVersion(&version) == ncclSuccess)  // 2.x: major * 10000 + minor * 100 + patch
        out.device.nccl = std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
                          std::to_string(version % 100);
    if (device_count < 2) {
        out.notes.push_back("collectives: skipped: one GPU in this node");
        return;
    }
    for (int ranks : plan.group_sizes)
        if (ranks <= device_count) measure_group(plan, ranks, out);
#else
    (void)plan;
    (void)device_count;
    out.notes.push_back("collectives: skipped: built without NCCL");
#endif
}

}  // namespace cuboid::calibrate
