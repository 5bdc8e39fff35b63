// Kernel launch overhead and pinned host <-> device copies.
#include <chrono>
#include <vector>

#include "calibrate/cuda/device_buffer.cuh"
#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/cuda/timing.cuh"

namespace cuboid::calibrate {
namespace {

__global__ void empty_kernel() {}

}  // namespace

void measure_launch(int device, const Plan& plan, Measurements& out) {
    CUBOID_CUDA(cudaSetDevice(device));
    cudaStream_t stream = nullptr;
    CUBOID_CUDA(cudaStreamCreate(&stream));
    // Back to back: the per-kernel cost a stream of dependent kernels pays when each does no
    // work; this is what the compute model adds per kernel (kernel_launch_us). 1000 launches per
    // batch make the batch ~ms long.
    EventPair events;
    auto launch = [&] { empty_kernel<<<1, 32, 0, stream>>>(); };
    for (int i = 0; i < plan.warmup; ++i) launch();
    keep_busy(stream, plan, 1000, launch);
    std::vector<double> per_kernel;
    for (int r = 0; r < plan.repeats; ++r) per_kernel.push_back(events.time(stream, 1000, launch) / 1000);
    out.launch_seconds = median(per_kernel);
    // Launch + synchronize, by the host clock: the round trip a host-side dependency costs.
    std::vector<double> sync;
    for (int r = 0; r < 10 * plan.repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        launch();
        CUBOID_CUDA(cudaStreamSynchronize(stream));
        sync.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    out.launch_sync_seconds = median(sync);
    CUBOID_CUDA(cudaGetLastError());
    cudaStreamDestroy(stream);
}

void measure_host_copies(int device, const Plan& plan, Measurements& out) {
    CUBOID_CUDA(cudaSetDevice(device));
    cudaStream_t stream = nullptr;
    CUBOID_CUDA(cudaStreamCreate(&stream));
    const std::size_t largest = std::size_t(plan.copy_bytes.back());
    {
        PinnedBuffer host(largest);
        DeviceBuffer dev(largest);
        for (double bytes : plan.copy_bytes) {
            const std::size_t n = std::size_t(bytes);
            const double h2d = time_per_call(stream, plan, [&] {
                CUBOID_CUDA(cudaMemcpyAsync(dev.as(), host.get(), n, cudaMemcpyHostToDevice, stream));
            });
            const double d2h = time_per_call(stream, plan, [&] {
                CUBOID_CUDA(cudaMemcpyAsync(host.get(), dev.as(), n, cudaMemcpyDeviceToHost, stream));
            });
            out.copies.push_back({"h2d", bytes, h2d});
            out.copies.push_back({"d2h", bytes, d2h});
        }
    }
    cudaStreamDestroy(stream);
}

}  // namespace cuboid::calibrate
