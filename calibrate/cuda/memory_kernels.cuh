// Memory-bound kernels of a transformer layer, written plainly (16-byte vector accesses, fp32
// arithmetic on bf16 data; fp32 for Adam's state), as training frameworks' fused kernels do.
// Each states the HBM bytes it moves per element, the figure the bandwidth is quoted against.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "calibrate/cuda/device_buffer.cuh"

namespace cuboid::calibrate::kernels {

using bf16 = __nv_bfloat16;

struct Vec8 {
    float v[8];
};

__device__ inline Vec8 load8(const bf16* p) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const bf16* h = reinterpret_cast<const bf16*>(&raw);
    Vec8 r;
#pragma unroll
    for (int i = 0; i < 8; ++i) r.v[i] = __bfloat162float(h[i]);
    return r;
}

__device__ inline void store8(bf16* p, const Vec8& x) {
    uint4 raw;
    bf16* h = reinterpret_cast<bf16*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) h[i] = __float2bfloat16(x.v[i]);
    *reinterpret_cast<uint4*>(p) = raw;
}

#define CUBOID_GRID_STRIDE(i, n) \
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); i += std::size_t(gridDim.x) * blockDim.x)

// Copy: 16 bytes per thread and step. Bytes: 2 per byte copied.
__global__ void copy(const uint4* x, uint4* y, std::size_t n16) {
    CUBOID_GRID_STRIDE(i, n16) y[i] = x[i];
}

// y = a + b (residual add). n8 = elements / 8. Bytes: 3 x 2 per element.
__global__ void residual_add(const bf16* a, const bf16* b, bf16* y, std::size_t n8) {
    CUBOID_GRID_STRIDE(i, n8) {
        Vec8 u = load8(a + 8 * i);
        const Vec8 w = load8(b + 8 * i);
#pragma unroll
        for (int j = 0; j < 8; ++j) u.v[j] += w.v[j];
        store8(y + 8 * i, u);
    }
}

// GeLU, tanh form (Hendrycks & Gimpel): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Bytes: 2 x 2 per element.
__global__ void gelu(const bf16* x, bf16* y, std::size_t n8) {
    CUBOID_GRID_STRIDE(i, n8) {
        Vec8 u = load8(x + 8 * i);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float v = u.v[j];
            u.v[j] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
        }
        store8(y + 8 * i, u);
    }
}

// SwiGLU: y = silu(g) * u. Bytes: 3 x 2 per element.
__global__ void swiglu(const bf16* g, const bf16* u, bf16* y, std::size_t n8) {
    CUBOID_GRID_STRIDE(i, n8) {
        Vec8 a = load8(g + 8 * i);
        const Vec8 b = load8(u + 8 * i);
#pragma unroll
        for (int j = 0; j < 8; ++j) a.v[j] = a.v[j] / (1.0f + __expf(-a.v[j])) * b.v[j];
        store8(y + 8 * i, a);
    }
}

// Dropout with a counter-based RNG (the mask is a function of (seed, index), as in Philox-based
// framework kernels, so backward can regenerate it): y = keep ? x / (1 - p) : 0, and the byte
// mask is stored. Bytes: 2 + 2 + 1 per element.
__global__ void dropout(const bf16* x, bf16* y, std::uint8_t* mask, std::size_t n8, float p, std::uint64_t seed) {
    const float scale = 1.0f / (1.0f - p);
    CUBOID_GRID_STRIDE(i, n8) {
        Vec8 u = load8(x + 8 * i);
        const std::uint64_t bits = mix64(seed ^ i);  // 8 bytes of randomness: one per element
        std::uint64_t m = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const bool keep = float((bits >> (8 * j)) & 0xFF) >= p * 256.0f;
            u.v[j] = keep ? u.v[j] * scale : 0.0f;
            m |= std::uint64_t(keep) << (8 * j);
        }
        store8(y + 8 * i, u);
        reinterpret_cast<std::uint64_t*>(mask)[i] = m;
    }
}

// Adam (fp32 master weights and moments): reads w, g, m, v; writes w, m, v. Bytes: 7 x 4.
__global__ void adam(float* w, const float* g, float* m, float* v, std::size_t n, float lr, float b1, float b2,
                     float eps) {
    CUBOID_GRID_STRIDE(i, n) {
        const float gi = g[i];
        const float mi = b1 * m[i] + (1.0f - b1) * gi;
        const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] -= lr * mi / (sqrtf(vi) + eps);
    }
}

// Block-wide sum of one float per thread (blockDim.x a multiple of 32, <= 1024).
__device__ inline float block_sum(float x, float* shared) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) shared[warp] = x;
    __syncthreads();
    x = lane < int(blockDim.x / 32) ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    __syncthreads();
    return x;
}

__device__ inline float block_max(float x, float* shared) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) shared[warp] = x;
    __syncthreads();
    x = lane < int(blockDim.x / 32) ? shared[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    __syncthreads();
    return x;
}

// One block per row of `cols` (<= 8 * blockDim.x * kRowVecs elements, a multiple of 8), the row
// held in registers: one read, one write.
constexpr int kRowVecs = 4;

// Layer norm over rows: (x - mean) / sqrt(var + eps) * gamma + beta. Bytes: 2 x 2 per element
// (gamma and beta, one row, stay in cache).
__global__ void layer_norm(const bf16* x, const bf16* gamma, const bf16* beta, bf16* y, int cols) {
    __shared__ float shared[32];
    const bf16* row = x + std::size_t(blockIdx.x) * cols;
    Vec8 r[kRowVecs];
    float sum = 0.0f, sq = 0.0f;
    for (int k = 0; k < kRowVecs; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= cols) break;
        r[k] = load8(row + c);
        for (int j = 0; j < 8; ++j) sum += r[k].v[j], sq += r[k].v[j] * r[k].v[j];
    }
    const float mean = block_sum(sum, shared) / cols;
    const float inv = rsqrtf(block_sum(sq, shared) / cols - mean * mean + 1e-5f);
    for (int k = 0; k < kRowVecs; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= cols) break;
        const Vec8 gm = load8(gamma + c), bt = load8(beta + c);
        for (int j = 0; j < 8; ++j) r[k].v[j] = (r[k].v[j] - mean) * inv * gm.v[j] + bt.v[j];
        store8(y + std::size_t(blockIdx.x) * cols + c, r[k]);
    }
}

// Softmax over rows (attention scores). Bytes: 2 x 2 per element.
__global__ void softmax(const bf16* x, bf16* y, int cols) {
    __shared__ float shared[32];
    const bf16* row = x + std::size_t(blockIdx.x) * cols;
    Vec8 r[kRowVecs];
    float mx = -INFINITY;
    for (int k = 0; k < kRowVecs; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= cols) break;
        r[k] = load8(row + c);
        for (int j = 0; j < 8; ++j) mx = fmaxf(mx, r[k].v[j]);
    }
    mx = block_max(mx, shared);
    float sum = 0.0f;
    for (int k = 0; k < kRowVecs; ++k) {
        if (8 * (threadIdx.x + k * blockDim.x) >= cols) break;
        for (int j = 0; j < 8; ++j) sum += (r[k].v[j] = __expf(r[k].v[j] - mx));
    }
    const float inv = 1.0f / block_sum(sum, shared);
    for (int k = 0; k < kRowVecs; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= cols) break;
        for (int j = 0; j < 8; ++j) r[k].v[j] *= inv;
        store8(y + std::size_t(blockIdx.x) * cols + c, r[k]);
    }
}

}  // namespace cuboid::calibrate::kernels
