// Timing of GPU work with CUDA events: warm-up runs, then `repeats` timed batches, each repeating
// the work enough times to last at least `min_batch_seconds` (so that short kernels are timed
// back to back, as they run in training, and the ~0.5 us event resolution does not matter); the
// median over batches, per call.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "calibrate/cuda/cuda_check.hpp"
#include "calibrate/fit/plan.hpp"
#include "calibrate/fit/stats.hpp"

namespace cuboid::calibrate {

// Owns a start/stop pair of events.
class EventPair {
public:
    EventPair() {
        CUBOID_CUDA(cudaEventCreate(&start_));
        CUBOID_CUDA(cudaEventCreate(&stop_));
    }
    ~EventPair() {
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
    }
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;

    // Seconds taken on `stream` by `calls` invocations of `work`.
    template <class Work>
    double time(cudaStream_t stream, int calls, Work&& work) {
        CUBOID_CUDA(cudaEventRecord(start_, stream));
        for (int i = 0; i < calls; ++i) work();
        CUBOID_CUDA(cudaEventRecord(stop_, stream));
        CUBOID_CUDA(cudaEventSynchronize(stop_));
        float ms = 0.0f;
        CUBOID_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
        return 1e-3 * double(ms);
    }

private:
    cudaEvent_t start_{};
    cudaEvent_t stop_{};
};

// Repeats `calls` invocations of `work` until the GPU has been busy `plan.busy_warmup_seconds`,
// so that its clock is up when timing starts (Plan::busy_warmup_seconds says why).
template <class Work>
void keep_busy(cudaStream_t stream, const Plan& plan, int calls, Work&& work) {
    EventPair events;
    for (double busy = 0.0; busy < plan.busy_warmup_seconds;) busy += events.time(stream, calls, work);
}

// Median seconds per call of `work` (which enqueues one call on `stream`).
template <class Work>
double time_per_call(cudaStream_t stream, const Plan& plan, Work&& work) {
    EventPair events;
    for (int i = 0; i < plan.warmup; ++i) work();
    const double one = std::max(events.time(stream, 1, work), 1e-7);
    const int calls = std::clamp(int(std::ceil(plan.min_batch_seconds / one)), 1, 10000);
    keep_busy(stream, plan, calls, work);
    std::vector<double> per_call;
    for (int r = 0; r < plan.repeats; ++r) per_call.push_back(events.time(stream, calls, work) / calls);
    CUBOID_CUDA(cudaGetLastError());
    return median(per_call);
}

}  // namespace cuboid::calibrate
