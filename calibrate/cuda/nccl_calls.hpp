// The NCCL calls that calibration times, shared by the one-process (all GPUs of a node, one
// thread each) and the mpirun (one process per GPU, several nodes) drivers. Only with NCCL.
#pragma once

#include <nccl.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/cuda/cuda_check.hpp"
#include "calibrate/fit/plan.hpp"

namespace cuboid::calibrate {

inline void nccl_check(ncclResult_t r, const char* call) {
    if (r != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(r));
}
#define CUBOID_NCCL(call) ::cuboid::calibrate::nccl_check((call), #call)

inline constexpr int kIters = 5;  // calls per timed trial

// NCCL reads NCCL_ALGO when a communicator is created: communicators created while this lives
// use the forced algorithm ("auto": NCCL's own choice, the variable as it was).
class ForcedAlgorithm {
public:
    explicit ForcedAlgorithm(const std::string& algorithm) {
        if (const char* v = std::getenv("NCCL_ALGO")) previous_ = v;
        if (algorithm != "auto") setenv("NCCL_ALGO", nccl_algo_name(algorithm).c_str(), 1);
    }
    ~ForcedAlgorithm() {
        if (previous_) setenv("NCCL_ALGO", previous_->c_str(), 1);
        else unsetenv("NCCL_ALGO");
    }
    ForcedAlgorithm(const ForcedAlgorithm&) = delete;
    ForcedAlgorithm& operator=(const ForcedAlgorithm&) = delete;

private:
    std::optional<std::string> previous_;
};

// What one rank needs to time calls: its stream, send and receive buffers of `bytes`, an event
// pair. Released on destruction (also when a call throws).
class RankTimer {
public:
    explicit RankTimer(std::size_t bytes) {
        CUBOID_CUDA(cudaStreamCreate(&stream_));
        CUBOID_CUDA(cudaMalloc(&send_, bytes));
        CUBOID_CUDA(cudaMalloc(&recv_, bytes));
        CUBOID_CUDA(cudaEventCreate(&start_));
        CUBOID_CUDA(cudaEventCreate(&stop_));
    }
    ~RankTimer() {
        cudaEventDestroy(stop_);
        cudaEventDestroy(start_);
        cudaFree(recv_);
        cudaFree(send_);
        cudaStreamDestroy(stream_);
    }
    RankTimer(const RankTimer&) = delete;
    RankTimer& operator=(const RankTimer&) = delete;

    cudaStream_t stream() const { return stream_; }
    void* send() const { return send_; }
    void* recv() const { return recv_; }
    // `warmup` untimed calls, finished before returning (the first calls set up NCCL's buffers).
    template <class Call>
    void warm_up(Call&& call, int warmup) {
        for (int i = 0; i < warmup; ++i) call();
        CUBOID_CUDA(cudaStreamSynchronize(stream_));
    }
    // Seconds per call of kIters back-to-back calls between the events.
    template <class Call>
    double seconds_per_call(Call&& call) {
        CUBOID_CUDA(cudaEventRecord(start_, stream_));
        for (int i = 0; i < kIters; ++i) call();
        CUBOID_CUDA(cudaEventRecord(stop_, stream_));
        CUBOID_CUDA(cudaEventSynchronize(stop_));
        float ms = 0.0f;
        CUBOID_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
        return 1e-3 * ms / kIters;
    }

private:
    cudaStream_t stream_ = nullptr;
    void* send_ = nullptr;
    void* recv_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// The algorithms a plan measures: NCCL's own choice, then the forced ones.
inline std::vector<std::string> measured_algorithms(const Plan& plan) {
    std::vector<std::string> all{"auto"};
    all.insert(all.end(), plan.forced_algorithms.begin(), plan.forced_algorithms.end());
    return all;
}

// The collectives of the plan that run on a group of `ranks` with `algorithm`.
inline std::vector<std::string> kinds_for(const Plan& plan, int ranks, const std::string& algorithm) {
    std::vector<std::string> kinds;
    for (const auto& k : plan.collectives)
        if ((k != "send-recv" || ranks == 2) && algorithm_applies(algorithm, k)) kinds.push_back(k);
    return kinds;
}

// One call of `kind` with S = bytes on `rank` of `ranks`; bf16 elements (training's gradients).
// Sizes follow hardware_models/collectives.hpp: S is one rank's buffer, except all-gather and
// reduce-scatter (the full buffer, P shards).
inline void issue(const std::string& kind, double bytes, int rank, int ranks, void* send, void* recv,
                  ncclComm_t comm, cudaStream_t s) {
    const std::size_t elems = std::size_t(bytes) / 2;
    const std::size_t shard = elems / std::size_t(ranks);
    if (kind == "all-reduce") CUBOID_NCCL(ncclAllReduce(send, recv, elems, ncclBfloat16, ncclSum, comm, s));
    else if (kind == "all-gather") CUBOID_NCCL(ncclAllGather(send, recv, shard, ncclBfloat16, comm, s));
    else if (kind == "reduce-scatter")
        CUBOID_NCCL(ncclReduceScatter(send, recv, shard, ncclBfloat16, ncclSum, comm, s));
    else if (kind == "broadcast") CUBOID_NCCL(ncclBroadcast(send, recv, elems, ncclBfloat16, 0, comm, s));
    else if (kind == "send-recv") {  // rank 0 -> rank 1, one direction (a pipeline hop)
        if (rank == 0) CUBOID_NCCL(ncclSend(send, elems, ncclBfloat16, 1, comm, s));
        else if (rank == 1) CUBOID_NCCL(ncclRecv(recv, elems, ncclBfloat16, 0, comm, s));
    } else {  // all-to-all: S/P to every peer, as grouped point-to-point calls
        CUBOID_NCCL(ncclGroupStart());
        for (int peer = 0; peer < ranks; ++peer) {
            CUBOID_NCCL(ncclSend(static_cast<char*>(send) + peer * shard * 2, shard, ncclBfloat16, peer, comm, s));
            CUBOID_NCCL(ncclRecv(static_cast<char*>(recv) + peer * shard * 2, shard, ncclBfloat16, peer, comm, s));
        }
        CUBOID_NCCL(ncclGroupEnd());
    }
}

}  // namespace cuboid::calibrate
