#include "calibrate/fit/plan.hpp"

#include <cctype>
#include <algorithm>
#include <cmath>
#include <string>
#include <sstream>

namespace cuboid::calibrate {
namespace {

std::vector<double> doubling(double from, double to, double step) {
    std::vector<double> v;
    for (double x = from; x <= to * 1.0000001; x *= step) v.push_back(x);
    return v;
}

std::vector<GemmDims> grid(const std::vector<double>& dims) {
    std::vector<GemmDims> g;
    for (double m : dims)
        for (double n : dims)
            for (double k : dims) g.push_back({std::int64_t(m), std::int64_t(n), std::int64_t(k), 1});
    return g;
}

// Attention products per (batch = micro-batch x heads, sequence s, head size d): scores
// QK^T is s x s over d, context PV is s x d over s.
std::vector<GemmDims> attention(const std::vector<double>& seqs, const std::vector<int>& heads,
                                const std::vector<int>& batches) {
    std::vector<GemmDims> g;
    for (double s : seqs)
        for (int d : heads)
            for (int b : batches) {
                g.push_back({std::int64_t(s), std::int64_t(s), d, b});
                g.push_back({std::int64_t(s), d, std::int64_t(s), b});
            }
    return g;
}

double gemm_rate(const std::string& precision) {
    if (precision == "tf32") return 350e12;
    if (precision == "fp8") return 1200e12;
    return 700e12;
}

constexpr double kCallSetup = 25e-6;   // per timed call: launches, events, sync
constexpr double kConfigSetup = 2e-3;  // per configuration: cuBLASLt heuristic query, descriptors
constexpr double kCommInit = 2.0;      // per NCCL communicator set (ncclCommInitAll)

// "1 MiB", "4 GiB": sizes of the sweeps are powers of two.
std::string human(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 3) bytes /= 1024.0, ++u;
    std::ostringstream s;
    s << bytes << " " << units[u];
    return s.str();
}

// warm-up (calls, then busy time) + repeats batches, each at least min_batch long.
double timed(const Plan& p, double one_call) {
    const double batch = std::max(one_call, p.min_batch_seconds);
    return kConfigSetup + (p.warmup + 1) * (one_call + kCallSetup) + p.busy_warmup_seconds +
           p.repeats * (batch + kCallSetup);
}

}  // namespace

std::vector<int> group_sizes_for(int gpus) {
    std::vector<int> g;
    for (int p = 2; p <= gpus; p *= 2) g.push_back(p);
    if (gpus >= 2 && (g.empty() || g.back() != gpus)) g.push_back(gpus);
    return g;
}

bool algorithm_applies(const std::string& algorithm, const std::string& kind) {
    if (algorithm == "auto") return true;
    if (algorithm == "tree") return kind == "all-reduce";
    if (algorithm == "ring") return kind != "all-to-all" && kind != "send-recv";
    return false;
}

std::string nccl_algo_name(const std::string& algorithm) {
    std::string s = algorithm;
    if (!s.empty()) s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
}

std::vector<NodeGroup> node_groups_for(int nodes, int gpus) {
    std::vector<NodeGroup> out;
    for (int n : group_sizes_for(nodes)) {
        out.push_back({n, 1});
        if (gpus > 1) out.push_back({n, gpus});
    }
    return out;
}

Plan make_plan(const PlanOptions& o) {
    Plan p;
    // Transformer dimensions: m = tokens (micro-batch x sequence), n and k = hidden sizes and
    // their tensor-parallel splits h/t, 4h/t; powers of two from 128 to 32768 bracket them all, so
    // the profile's trilinear interpolation in log space has all 8 corners for any shape inside.
    const std::vector<double> dims = o.quick ? std::vector<double>{512, 2048, 8192}
                                             : doubling(128, 32768, 2);
    p.gemm_precisions = o.quick ? std::vector<std::string>{"bf16"}
                                : std::vector<std::string>{"fp16", "bf16", "tf32"};
    if (o.fp8) p.gemm_precisions.push_back("fp8");
    p.gemm = grid(dims);
    p.batched_precisions = {"bf16"};
    if (!o.quick) p.batched_precisions.insert(p.batched_precisions.begin(), "fp16");
    p.batched = o.quick ? attention({1024, 4096}, {128}, {32})
                        : attention(doubling(512, 8192, 2), {64, 128}, {16, 64});
    p.memory_kernels = {"copy", "residual-add", "layer-norm", "softmax", "gelu", "swiglu", "dropout", "adam"};
    p.memory_bytes = o.quick ? doubling(1 << 20, 1 << 30, 16) : doubling(1 << 20, 4.0 * (1 << 30), 4);
    // 28 bytes moved per parameter: 16 GiB is 0.6 B parameters (9 GiB of state), 64 GiB is 2.5 B
    // (37 GiB), the state of GPT 3.6B's stage on one GPU.
    if (!o.quick) p.optimizer_bytes = {16.0 * (1 << 30), 64.0 * (1 << 30)};
    p.collectives = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "send-recv"};
    p.group_sizes = group_sizes_for(o.gpus);
    p.node_groups = node_groups_for(o.nodes, o.gpus);
    p.collective_bytes = doubling(1024, o.quick ? 256.0 * (1 << 20) : 1024.0 * (1 << 20), o.quick ? 4 : 2);
    p.copy_bytes = doubling(4096, o.quick ? 256.0 * (1 << 20) : 1024.0 * (1 << 20), 4);
    if (!o.quick) p.forced_algorithms = {"ring", "tree"};
    if (o.quick) p.repeats = 5;
    return p;
}

double estimate_seconds(const Plan& p) {
    double t = 0.0;
    for (const auto& prec : p.gemm_precisions)
        for (const auto& g : p.gemm) t += timed(p, 2.0 * g.m * g.n * g.k / gemm_rate(prec) + 5e-6);
    for (const auto& prec : p.batched_precisions)
        for (const auto& g : p.batched) t += timed(p, 2.0 * g.m * g.n * g.k * g.batch / gemm_rate(prec) + 5e-6);
    for (std::size_t i = 0; i < p.memory_kernels.size(); ++i)
        for (double b : p.memory_bytes) t += timed(p, b / 2.8e12 + 3e-6);
    for (double b : p.optimizer_bytes) t += timed(p, b / 2.0e12);
    for (double b : p.copy_bytes) t += 2.0 * timed(p, b / 25e9 + 10e-6);
    t *= double(p.passes);  // the single-GPU passes, repeated
    t += kCommInit * double(p.group_sizes.size() * (1 + p.forced_algorithms.size()));
    for (int ranks : p.group_sizes)
        for (std::size_t c = 0; c < p.collectives.size(); ++c) {
            if (p.collectives[c] == "send-recv" && ranks != 2) continue;
            std::size_t passes = 1;
            for (const auto& a : p.forced_algorithms) passes += algorithm_applies(a, p.collectives[c]) ? 1 : 0;
            for (double b : p.collective_bytes) t += double(passes) * timed(p, 2.0 * b / 350e9 + 20e-6);
        }
    // Across nodes: ~25 GB/s per NIC (200 Gb/s class) and a few microseconds more per call.
    t += kCommInit * double(p.node_groups.size());
    for (const auto& g : p.node_groups)
        for (std::size_t c = 0; c < p.collectives.size(); ++c) {
            if (p.collectives[c] == "send-recv" && g.ranks() != 2) continue;
            for (double b : p.collective_bytes) t += timed(p, 2.0 * b / 25e9 + 30e-6);
        }
    return t;
}

std::string describe(const Plan& p) {
    std::ostringstream s;
    const auto list = [](const std::vector<std::string>& v) {
        std::string out;
        for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
        return out;
    };
    std::size_t sends = 0;
    for (int r : p.group_sizes) sends += r == 2 ? 1 : 0;
    const std::size_t collective_configs =
        p.group_sizes.size() * (p.collectives.size() - 1) + sends;
    s << "GEMM (cuBLASLt): " << p.gemm.size() << " shapes x " << p.gemm_precisions.size()
      << " precisions (" << list(p.gemm_precisions) << "), m, n, k from " << p.gemm.front().m << " to "
      << p.gemm.back().m << "\n";
    s << "batched GEMM (attention): " << p.batched.size() << " shapes x " << p.batched_precisions.size()
      << " precisions (" << list(p.batched_precisions) << ")\n";
    s << "memory-bound kernels: " << p.memory_kernels.size() << " (" << list(p.memory_kernels) << ") x "
      << p.memory_bytes.size() << " sizes, " << human(p.memory_bytes.front()) << " to " << human(p.memory_bytes.back())
      << " moved";
    if (!p.optimizer_bytes.empty())
        s << "; adam also at " << human(p.optimizer_bytes.front()) << " to " << human(p.optimizer_bytes.back())
          << " (where its state fits in half the GPU's memory)";
    s << "\n";
    s << "kernel launch overhead: empty kernels back to back, and launch + synchronize\n";
    s << "host <-> device copies (pinned): 2 directions x " << p.copy_bytes.size() << " sizes, "
      << human(p.copy_bytes.front()) << " to " << human(p.copy_bytes.back()) << "\n";
    s << "NCCL collectives: " << list(p.collectives) << " on group sizes";
    for (int r : p.group_sizes) s << " " << r;
    if (p.group_sizes.empty()) s << " (none: one GPU)";
    s << " (send-recv on 2 ranks only): " << collective_configs << " configurations x "
      << p.collective_bytes.size() << " sizes, " << human(p.collective_bytes.front()) << " to "
      << human(p.collective_bytes.back()) << "\n";
    if (!p.forced_algorithms.empty())
        s << "  each also with the algorithm forced (NCCL_ALGO): " << list(p.forced_algorithms)
          << " (ring: all but all-to-all and send-recv; tree: all-reduce)\n";
    if (!p.node_groups.empty()) {
        s << "NCCL collectives across nodes (mpirun), nodes x GPUs per node:";
        for (const auto& g : p.node_groups) s << " " << g.nodes << "x" << g.gpus_per_node;
        s << " (same kinds and sizes)\n";
    }
    s << "timing: " << p.warmup << " warm-up runs, " << p.busy_warmup_seconds * 1e3 << " ms busy, median of " << p.repeats
      << " timed batches; the single-GPU passes " << p.passes << " times, median per point\n";
    s << "estimated time on an H100-class node: " << std::lround(estimate_seconds(p)) << " s\n";
    return s.str();
}

}  // namespace cuboid::calibrate
