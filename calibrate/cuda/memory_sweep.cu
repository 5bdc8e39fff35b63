// Achieved bandwidth of the memory-bound kernels (memory_kernels.cuh) against bytes moved.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "calibrate/cuda/kernel_bytes.hpp"
#include "calibrate/cuda/memory_kernels.cuh"
#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/cuda/timing.cuh"

namespace cuboid::calibrate {
namespace {

namespace k = kernels;

constexpr int kThreads = 256;
constexpr int kRowLength = 8192;  // layer norm: a hidden size; softmax: a sequence length

// HBM bytes moved per element (kernel_bytes.hpp).
double bytes_per_element(const std::string& kernel) {
    namespace b = kernel_bytes;
    if (kernel == "copy") return b::kCopy;
    if (kernel == "residual-add") return b::kResidualAdd;
    if (kernel == "swiglu") return b::kSwiglu;
    if (kernel == "dropout") return b::kDropout;
    if (kernel == "adam") return b::kAdam;
    if (kernel == "layer-norm") return b::kLayerNorm;
    if (kernel == "softmax") return b::kSoftmax;
    return b::kGelu;
}

// Bytes of device memory per element the operands occupy: Adam moves more than it keeps (three
// of its four arrays are read and written back); the others write each byte they move once.
double storage_per_element(const std::string& kernel) {
    return kernel == "adam" ? kernel_bytes::kAdamState : bytes_per_element(kernel);
}

// Enough blocks to fill the GPU several times over, grid-stride beyond that.
int blocks_for(std::size_t items, int sms) {
    return int(std::min<std::size_t>((items + kThreads - 1) / kThreads, std::size_t(sms) * 32));
}

// Carves operands out of one allocation (256-byte aligned).
struct Carver {
    char* base;
    std::size_t offset = 0;
    template <class T>
    T* take(std::size_t count) {
        T* p = reinterpret_cast<T*>(base + offset);
        offset += (count * sizeof(T) + 255) / 256 * 256;
        return p;
    }
};

std::function<void()> launcher(const std::string& kernel, std::size_t n, char* base, int sms, cudaStream_t s) {
    Carver c{base};
    const int b8 = blocks_for(n / 8, sms);
    if (kernel == "copy") {
        auto* x = c.take<uint4>(n / 8);
        auto* y = c.take<uint4>(n / 8);
        return [=] { k::copy<<<b8, kThreads, 0, s>>>(x, y, n / 8); };
    }
    if (kernel == "residual-add" || kernel == "swiglu") {
        auto* a = c.take<k::bf16>(n);
        auto* b = c.take<k::bf16>(n);
        auto* y = c.take<k::bf16>(n);
        if (kernel == "swiglu") return [=] { k::swiglu<<<b8, kThreads, 0, s>>>(a, b, y, n / 8); };
        return [=] { k::residual_add<<<b8, kThreads, 0, s>>>(a, b, y, n / 8); };
    }
    if (kernel == "gelu") {
        auto* x = c.take<k::bf16>(n);
        auto* y = c.take<k::bf16>(n);
        return [=] { k::gelu<<<b8, kThreads, 0, s>>>(x, y, n / 8); };
    }
    if (kernel == "dropout") {
        auto* x = c.take<k::bf16>(n);
        auto* y = c.take<k::bf16>(n);
        auto* m = c.take<std::uint8_t>(n);
        return [=] { k::dropout<<<b8, kThreads, 0, s>>>(x, y, m, n / 8, 0.1f, 42); };
    }
    if (kernel == "adam") {
        auto* w = c.take<float>(n);
        auto* g = c.take<float>(n);
        auto* m = c.take<float>(n);
        auto* v = c.take<float>(n);
        return [=] { k::adam<<<blocks_for(n, sms), kThreads, 0, s>>>(w, g, m, v, n, 1e-4f, 0.9f, 0.999f, 1e-8f); };
    }
    // Row kernels: kRowLength / 8 vectors per row over kThreads threads, kRowVecs each.
    const int rows = int(n / kRowLength);
    auto* x = c.take<k::bf16>(n);
    auto* y = c.take<k::bf16>(n);
    if (kernel == "softmax") return [=] { k::softmax<<<rows, kThreads, 0, s>>>(x, y, kRowLength); };
    auto* gamma = c.take<k::bf16>(kRowLength);
    auto* beta = c.take<k::bf16>(kRowLength);
    return [=] { k::layer_norm<<<rows, kThreads, 0, s>>>(x, gamma, beta, y, kRowLength); };
}

static_assert(kRowLength <= 8 * kThreads * k::kRowVecs, "a row must fit the registers of one block");

// Training streams its activations through HBM: a layer's tensors are not in the L2 cache when
// the next call of the same kernel comes. Calls back to back over one small operand set would
// measure the L2 cache instead (a 16 MiB copy ran at ~35 TB/s on an H100, 50 MiB of L2), so
// consecutive calls rotate over distinct operand sets that together span twice the L2 cache.
constexpr double kL2Multiple = 2.0;

std::function<void()> rotating_launcher(const std::string& kernel, std::size_t n, DeviceBuffer& buffer, double span,
                                        int sms, cudaStream_t s) {
    // Bytes one call's operands occupy (kernel-specific layout, as launcher() carves them).
    const std::size_t footprint = std::size_t(double(n) * storage_per_element(kernel)) + 4 * kRowLength + 1024;
    const std::size_t stride = (footprint + 255) / 256 * 256;
    const std::size_t sets = std::max<std::size_t>(1, std::size_t(span) / stride);
    std::vector<std::function<void()>> runs;
    for (std::size_t i = 0; i < sets; ++i) runs.push_back(launcher(kernel, n, buffer.as<char>() + i * stride, sms, s));
    return [runs = std::move(runs), next = std::size_t(0)]() mutable { runs[next++ % runs.size()](); };
}

}  // namespace

void measure_memory_kernels(int device, const Plan& plan, Measurements& out) {
    CUBOID_CUDA(cudaSetDevice(device));
    cudaStream_t stream = nullptr;
    CUBOID_CUDA(cudaStreamCreate(&stream));
    int l2_bytes = 0;
    CUBOID_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    // Per kernel, the sizes it is measured at: Adam also at the optimizer sizes whose state fits
    // in half the GPU's memory.
    auto sizes_of = [&](const std::string& kernel) {
        std::vector<double> sizes = plan.memory_bytes;
        if (kernel == "adam")
            for (double b : plan.optimizer_bytes)
                if (b / bytes_per_element(kernel) * storage_per_element(kernel) <= 0.5 * out.device.memory_bytes)
                    sizes.push_back(b);
        return sizes;
    };
    // Large enough for the largest call's operands, and for twice the L2 cache in distinct sets.
    double span = kL2Multiple * double(l2_bytes);
    for (const auto& kernel : plan.memory_kernels)
        for (double b : sizes_of(kernel)) span = std::max(span, b / bytes_per_element(kernel) * storage_per_element(kernel));
    DeviceBuffer buffer(std::size_t(span) + (1u << 20));
    // Random bf16 data (values in [-1, 1)), so that GeLU and exp see realistic inputs.
    fill(buffer.as<k::bf16>(), buffer.bytes() / 2, 7, stream);
    for (const auto& kernel : plan.memory_kernels)
        for (double target : sizes_of(kernel)) {
            // Elements: a whole number of rows (row kernels) and of 8-element vectors.
            std::size_t n = std::size_t(target / bytes_per_element(kernel));
            n = std::max<std::size_t>(n / kRowLength * kRowLength, kRowLength);
            const auto run = rotating_launcher(kernel, n, buffer, span, out.device.sm_count, stream);
            const double seconds = time_per_call(stream, plan, run);
            out.memory.push_back({kernel, double(n) * bytes_per_element(kernel), seconds});
        }
    cudaStreamDestroy(stream);
}

}  // namespace cuboid::calibrate
