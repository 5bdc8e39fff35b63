#include "validate/cuda/rank_runner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include "calibrate/cuda/cuda_check.hpp"
#include "validate/cuda/device_work.hpp"
#include "strategies/program_streams.hpp"

namespace cuboid::validate::gpu {
namespace {

constexpr std::size_t kMinScratch = 1u << 20;  // working buffers at least 1 MiB

// A device allocation that frees itself.
class Buffer {
public:
    explicit Buffer(double bytes) : bytes_(std::max<std::size_t>(kMinScratch, static_cast<std::size_t>(bytes))) {
        CUBOID_CUDA(cudaMalloc(&p_, bytes_));
    }
    ~Buffer() { cudaFree(p_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    void* get() const { return p_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* p_ = nullptr;
    std::size_t bytes_ = 0;
};

class Events {
public:
    Events(std::size_t n, unsigned flags) : e_(n) {
        for (auto& e : e_) CUBOID_CUDA(cudaEventCreateWithFlags(&e, flags));
    }
    ~Events() {
        for (auto e : e_) cudaEventDestroy(e);
    }
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;
    cudaEvent_t operator[](std::size_t i) const { return e_[i]; }

private:
    std::vector<cudaEvent_t> e_;
};

double elapsed(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0.0f;
    CUBOID_CUDA(cudaEventElapsedTime(&ms, from, to));
    return 1e-3 * double(ms);
}

MemoryKernel memory_kernel(sim::OpKind k) {
    switch (k) {
        case sim::OpKind::LayerNorm: return MemoryKernel::LayerNorm;
        case sim::OpKind::Softmax:
        case sim::OpKind::CrossEntropy: return MemoryKernel::Softmax;  // a row softmax over the vocabulary
        case sim::OpKind::Activation: return MemoryKernel::Activation;
        case sim::OpKind::Dropout: return MemoryKernel::Dropout;
        case sim::OpKind::Embedding: return MemoryKernel::Copy;  // a gather of rows
        case sim::OpKind::Optimizer: return MemoryKernel::Optimizer;
        default: return MemoryKernel::Elementwise;
    }
}

class Runner {
public:
    Runner(const sim::Program& program, const ExecutionPlan& plan, std::uint32_t rank, const Bootstrap& boot)
        : program_(program), rank_plan_(plan.ranks.at(rank)), list_(program.op_lists[rank_plan_.list]),
          plan_(plan.lists[rank_plan_.list]), resident_(plan_.resident_bytes), a_(plan_.gemm_a_bytes),
          b_(plan_.gemm_b_bytes), d_(plan_.gemm_d_bytes), in_(plan_.memory_op_bytes), out_(plan_.memory_op_bytes),
          send_(plan_.comm_bytes), recv_(plan_.comm_bytes), deps_(list_.ops.size(), cudaEventDisableTiming),
          starts_(list_.ops.size(), cudaEventDefault), ends_(list_.ops.size(), cudaEventDefault),
          marks_(2 + stream::kCount, cudaEventDefault), pieces_(plan_.pieces.size(), nullptr) {
        for (auto& s : streams_) CUBOID_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CUBOID_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, 0));
        CUBOID_CUDA(cudaDeviceGetDefaultMemPool(&pool_, 0));
        auto keep = std::numeric_limits<std::uint64_t>::max();  // keep freed memory in the pool
        CUBOID_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
        for (const Buffer* b : {&resident_, &a_, &b_, &d_, &in_, &out_, &send_, &recv_})
            fill_random(b->get(), b->bytes(), rank_plan_.rank + 1, streams_[0]);
        // Communicators in ascending key order; the job-wide one (key = number of groups) last.
        for (std::uint32_t g : rank_plan_.communicators) comms_.create(boot, g, program.groups[g].ranks, rank_plan_.rank);
        std::vector<std::uint32_t> all(program.ranks.size());
        std::iota(all.begin(), all.end(), 0u);
        comms_.create(boot, static_cast<std::uint32_t>(program.groups.size()), all, rank_plan_.rank);
        world_ = rank_plan_.communicators.size();
        CUBOID_CUDA(cudaDeviceSynchronize());
    }
    ~Runner() {
        for (auto s : streams_) cudaStreamDestroy(s);
    }

    double working_bytes() const {
        double w = 0.0;
        for (const Buffer* b : {&a_, &b_, &d_, &in_, &out_, &send_, &recv_}) w += double(b->bytes());
        return w;
    }
    cudaMemPool_t pool() const { return pool_; }

    // One iteration; with `profile` every op is timed. Returns its seconds.
    double iteration(bool profile) {
        cudaStream_t main = streams_[0];
        issue(sim::OpKind::AllReduce, 2.0, static_cast<int>(program_.ranks.size()), -1, send_.get(), recv_.get(),
              comms_.at(world_), main);
        CUBOID_CUDA(cudaEventRecord(marks_[0], main));
        for (std::size_t s = 1; s < streams_.size(); ++s) CUBOID_CUDA(cudaStreamWaitEvent(streams_[s], marks_[0], 0));
        std::size_t call = 0;
        for (const PlannedOp& p : plan_.ops) {
            cudaStream_t s = streams_[p.stream];
            for (std::uint32_t w : p.waits) CUBOID_CUDA(cudaStreamWaitEvent(s, deps_[w], 0));
            for (std::uint32_t piece : p.allocs)
                CUBOID_CUDA(cudaMallocAsync(&pieces_[piece], static_cast<std::size_t>(plan_.pieces[piece].bytes), s));
            if (profile) CUBOID_CUDA(cudaEventRecord(starts_[p.op], s));
            run_op(p.op, s, call);
            if (profile) CUBOID_CUDA(cudaEventRecord(ends_[p.op], s));
            if (p.records_event) CUBOID_CUDA(cudaEventRecord(deps_[p.op], s));
            for (std::uint32_t piece : p.frees) CUBOID_CUDA(cudaFreeAsync(pieces_[piece], s));
        }
        for (std::size_t s = 1; s < streams_.size(); ++s) {  // join every stream into the first
            CUBOID_CUDA(cudaEventRecord(marks_[1 + s], streams_[s]));
            CUBOID_CUDA(cudaStreamWaitEvent(main, marks_[1 + s], 0));
        }
        CUBOID_CUDA(cudaEventRecord(marks_[1], main));
        for (std::size_t piece = 0; piece < plan_.pieces.size(); ++piece)
            if (plan_.pieces[piece].free_op == kIterationEnd) CUBOID_CUDA(cudaFreeAsync(pieces_[piece], main));
        CUBOID_CUDA(cudaStreamSynchronize(main));
        CUBOID_CUDA(cudaGetLastError());
        return elapsed(marks_[0], marks_[1]);
    }

    // Start and end of every op of the last profiled iteration, from the iteration's start.
    std::vector<Interval> op_intervals() const {
        std::vector<Interval> v;
        for (std::size_t i = 0; i < list_.ops.size(); ++i)
            v.push_back({elapsed(marks_[0], starts_[i]), elapsed(marks_[0], ends_[i])});
        return v;
    }

private:
    void run_op(std::uint32_t i, cudaStream_t s, std::size_t& call) {
        const sim::Op& op = list_.ops[i];
        if (op.kind == sim::OpKind::HostDispatch) return;  // the host issuing: nothing on the GPU
        if (sim::is_communication(op.kind)) {
            const CommCall& c = rank_plan_.calls.at(call++);
            const auto& group = program_.groups[rank_plan_.communicators[c.communicator]];
            issue(op.kind, op.bytes.value, static_cast<int>(group.ranks.size()), c.peer, send_.get(), recv_.get(),
                  comms_.at(c.communicator), s);
        } else if (sim::is_gemm(op.kind)) {
            const auto& g = op.shape;
            if (g.m > 0 && g.n > 0 && g.k > 0)
                gemm_.run(static_cast<GemmPrecision>(op.precision), g.m, g.n, g.k, std::max<std::int64_t>(1, g.batch),
                          a_.get(), b_.get(), d_.get(), s);
        } else if (sim::is_fused_attention(op.kind)) {
            throw std::runtime_error("the GPU executor does not run fused attention kernels yet; validate a scenario "
                                     "with model.attention: unfused");
        } else if (plan_.ops[i].on_resident_state) {
            void* state = resident_.get();
            launch_memory_kernel(MemoryKernel::Copy, op.bytes.value, state, state, sms_, s);
        } else if (op.kind == sim::OpKind::Optimizer && optimizer_in_place(op.bytes.value, plan_.resident_bytes)) {
            // Weights and gradients, then the two moments, in the resident state (execution_plan.hpp).
            const auto parameters = std::size_t(op.bytes.value / calibrate::kernel_bytes::kAdam);
            auto* state = static_cast<float*>(resident_.get());
            launch_memory_kernel(MemoryKernel::Optimizer, op.bytes.value, state, state + 2 * parameters, sms_, s);
        } else if (op.bytes.value > 0.0) {
            launch_memory_kernel(memory_kernel(op.kind), op.bytes.value, in_.get(), out_.get(), sms_, s);
        }
    }

    const sim::Program& program_;
    const RankPlan& rank_plan_;
    const sim::OpList& list_;
    const ListPlan& plan_;
    Buffer resident_, a_, b_, d_, in_, out_, send_, recv_;
    Events deps_, starts_, ends_, marks_;  // marks: iteration start, end, per-stream joins
    std::vector<void*> pieces_;
    std::array<cudaStream_t, stream::kCount> streams_{};
    Communicators comms_;
    std::size_t world_ = 0;
    GemmRunner gemm_;
    cudaMemPool_t pool_ = nullptr;
    int sms_ = 0;
};

std::string device_name(int device) {
    cudaDeviceProp p{};
    CUBOID_CUDA(cudaGetDeviceProperties(&p, device));
    return p.name;
}

}  // namespace

RankMeasurement run_rank(const sim::Program& program, const ExecutionPlan& plan, std::uint32_t rank, int device,
                         const Bootstrap& boot, const ExecutorOptions& options) {
    CUBOID_CUDA(cudaSetDevice(device));
    RankMeasurement m;
    m.rank = rank;
    m.device = device_name(device);
    Runner runner(program, plan, rank, boot);
    for (int i = 0; i < options.warmup; ++i) runner.iteration(false);
    // Memory: what the device holds besides the pool and the executor's working buffers (context,
    // cuBLAS, NCCL, resident state) plus the pool's high-water mark of the program's allocations.
    std::size_t free_b = 0, total_b = 0;
    CUBOID_CUDA(cudaMemGetInfo(&free_b, &total_b));
    std::uint64_t reserved = 0, zero = 0;
    CUBOID_CUDA(cudaMemPoolGetAttribute(runner.pool(), cudaMemPoolAttrReservedMemCurrent, &reserved));
    CUBOID_CUDA(cudaMemPoolSetAttribute(runner.pool(), cudaMemPoolAttrUsedMemHigh, &zero));
    for (int i = 0; i < options.iterations; ++i) m.iteration_s.push_back(runner.iteration(false));
    std::vector<std::vector<Interval>> profiled;
    for (int i = 0; i < options.profiled; ++i) {
        runner.iteration(true);
        profiled.push_back(runner.op_intervals());
    }
    std::uint64_t high = 0;
    CUBOID_CUDA(cudaMemPoolGetAttribute(runner.pool(), cudaMemPoolAttrUsedMemHigh, &high));
    const double baseline = double(total_b - free_b) - double(reserved) - runner.working_bytes();
    m.peak_memory_bytes = baseline + double(high);
    m.notes.push_back("working buffers (not counted): " + std::to_string(runner.working_bytes() / 1048576.0) + " MiB");
    // Per op, the median start and end over the profiled iterations.
    if (!profiled.empty())
        for (std::size_t i = 0; i < profiled.front().size(); ++i) {
            std::vector<double> s, e;
            for (const auto& it : profiled) s.push_back(it[i].start_s), e.push_back(it[i].end_s);
            std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(s.size() / 2), s.end());
            std::nth_element(e.begin(), e.begin() + std::ptrdiff_t(e.size() / 2), e.end());
            m.ops.push_back({s[s.size() / 2], e[e.size() / 2]});
        }
    return m;
}

}  // namespace cuboid::validate::gpu
