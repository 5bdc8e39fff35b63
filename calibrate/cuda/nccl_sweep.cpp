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
#include "calibrate/cuda/nccl_calls.hpp"
#endif

namespace cuboid::calibrate {

#if CUBOID_HAVE_NCCL
namespace {

// Per-rank worker: times every (kind, size) and writes its per-trial seconds into `times`.
void rank_worker(int rank, int ranks, ncclComm_t comm, const Plan& plan, const std::vector<std::string>& kinds,
                 std::barrier<>& sync, std::vector<std::vector<double>>& times, std::string& error) {
    try {
        CUBOID_CUDA(cudaSetDevice(rank));
        RankTimer timer(std::size_t(plan.collective_bytes.back()));
        std::size_t slot = 0;
        for (const auto& kind : kinds)
            for (double bytes : plan.collective_bytes) {
                auto call = [&] { issue(kind, bytes, rank, ranks, timer.send(), timer.recv(), comm, timer.stream()); };
                timer.warm_up(call, plan.warmup);
                for (int t = 0; t < plan.repeats; ++t) {
                    sync.arrive_and_wait();  // start the ranks' trials together
                    times[slot * std::size_t(plan.repeats) + std::size_t(t)][std::size_t(rank)] =
                        timer.seconds_per_call(call);
                }
                ++slot;
            }
    } catch (const std::exception& e) {
        error = e.what();
        sync.arrive_and_drop();
    }
}

void measure_group(const Plan& plan, int ranks, const std::string& algorithm, Measurements& out) {
    const std::vector<std::string> kinds = kinds_for(plan, ranks, algorithm);
    const auto n = static_cast<std::size_t>(ranks);
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devices(n);
    for (int r = 0; r < ranks; ++r) devices[std::size_t(r)] = r;
    {
        const ForcedAlgorithm forced(algorithm);
        CUBOID_NCCL(ncclCommInitAll(comms.data(), ranks, devices.data()));
    }
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
            out.collectives.push_back({kind, ranks, bytes, median(slowest), 1, algorithm});
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
        if (ranks <= device_count)
            for (const auto& algorithm : measured_algorithms(plan)) measure_group(plan, ranks, algorithm, out);
#else
    (void)plan;
    (void)device_count;
    out.notes.push_back("collectives: skipped: built without NCCL");
#endif
}

}  // namespace cuboid::calibrate
