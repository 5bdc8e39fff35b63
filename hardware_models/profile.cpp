#include "hardware_models/profile.hpp"

#include <fstream>
#include <sstream>

#include "hardware_models/catalog_parse.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/input_file.hpp"
#include "hardware_models/physical_limits.hpp"
#include "hardware_models/yaml_reader.hpp"

namespace cuboid::hw {

const char* memory_kind_name(sim::OpKind kind) {
    using K = sim::OpKind;
    switch (kind) {
        case K::LayerNorm: return "layer-norm";
        case K::Softmax: return "softmax";
        case K::Activation: return "activation";
        case K::Dropout: return "dropout";
        case K::Embedding: return "embedding";
        case K::CrossEntropy: return "cross-entropy";
        case K::Optimizer: return "optimizer";
        default: return "elementwise";
    }
}

const char* collective_kind_name(sim::OpKind kind) {
    using K = sim::OpKind;
    switch (kind) {
        case K::AllReduce: return "all-reduce";
        case K::AllGather: return "all-gather";
        case K::ReduceScatter: return "reduce-scatter";
        case K::Broadcast: return "broadcast";
        case K::AllToAll: return "all-to-all";
        case K::RingExchange: return "ring-exchange";
        default: return "send-recv";
    }
}

static sim::OpKind parse_collective_kind(const YamlReader& r) {
    using K = sim::OpKind;
    const std::string s = r.text();
    for (K k : {K::AllReduce, K::AllGather, K::ReduceScatter, K::Broadcast, K::AllToAll, K::Send})
        if (s == collective_kind_name(k)) return k;
    r.fail("unknown collective '" + s +
           "' (allowed: all-reduce, all-gather, reduce-scatter, broadcast, all-to-all, send-recv)");
}

static std::int64_t positive_dim(const YamlReader& r, const std::string& name) {
    const double v = number_in(r, name, 1.0, 1e12);
    return static_cast<std::int64_t>(v);
}

static GemmSample parse_gemm(const YamlReader& r) {
    GemmSample s;
    const auto p = precision_from_name(r.text("precision"));
    if (!p) r.at("precision").fail("unknown precision (allowed: fp32, tf32, fp16, bf16, fp8)");
    s.precision = *p;
    s.m = positive_dim(r, "m");
    s.n = positive_dim(r, "n");
    s.k = positive_dim(r, "k");
    s.tflops = number_in(r, "tflops", 1e-9, 1e6);
    return s;
}

static BatchedGemmSample parse_batched_gemm(const YamlReader& r) {
    const GemmSample g = parse_gemm(r);
    return {g.precision, g.m, g.n, g.k, static_cast<std::int64_t>(number_in(r, "batch", 1, 1e9)), g.tflops};
}

static AttentionSample parse_attention(const YamlReader& r) {
    const std::string direction = r.text("direction");
    if (direction != "forward" && direction != "backward")
        r.at("direction").fail("unknown direction '" + direction + "' (allowed: forward, backward)");
    return {direction == "backward", positive_dim(r, "keys"), positive_dim(r, "head_dim"),
            number_in(r, "tflops", 1e-9, 1e6)};
}

static MemorySample parse_memory(const YamlReader& r) {
    return {r.text("kind"), number_in(r, "bytes", 1.0, 1e15), number_in(r, "gb_per_s", 1e-6, limits::kMaxGigabytesPerSecond)};
}

// Measured sizes must ascend strictly: the interpolation brackets a size between neighbours.
static std::vector<BusBandwidthPoint> parse_table(const YamlReader& r) {
    std::vector<BusBandwidthPoint> table;
    for (const auto& item : r.items()) {
        const BusBandwidthPoint p{number_in(item, "bytes", 1.0, 1e15), number_in(item, "bus_gb_per_s", limits::kMinBusGigabytesPerSecond, limits::kMaxGigabytesPerSecond)};
        if (!table.empty() && p.bytes <= table.back().bytes)
            item.at("bytes").fail("table sizes must ascend (each larger than the one before)");
        table.push_back(p);
    }
    return table;
}

static CollectiveSample parse_collective(const YamlReader& r) {
    CollectiveSample s;
    s.kind = parse_collective_kind(r.at("kind"));
    s.algorithm = r.text_or("algorithm", "auto");
    s.ranks = static_cast<int>(number_in(r, "ranks", 2, 1e7));
    if (r.find("nodes")) s.nodes = static_cast<int>(number_in(r, "nodes", 1, 1e7));
    s.alpha = microseconds(number_in(r, "alpha_us", 0.0, limits::kMaxLatencyMicroseconds));
    s.bus_gb_per_s = number_in(r, "bus_gb_per_s", limits::kMinBusGigabytesPerSecond, limits::kMaxGigabytesPerSecond);
    if (auto t = r.find("table")) s.table = parse_table(*t);
    return s;
}

HardwareProfile HardwareProfile::parse(const std::string& text, const std::string& file) {
    const YamlReader root = YamlReader::parse(text, file);
    if (!root.is_map()) root.fail("a hardware profile is a YAML map");
    HardwareProfile p;
    if (auto meta = root.find("metadata")) {
        // Free-form notes, except gpu, which is checked against cluster.gpu.
        for (const auto& [key, value] : meta->entries()) {
            if (!value.is_map() && !value.is_sequence()) p.metadata[key] = value.text();
            else if (key == "gpu") value.fail("expected the GPU's catalog name (`cuboid list gpus`), not a list or map");
        }
    }
    if (root.find("kernel_launch_us"))
        p.kernel_launch = microseconds(number_in(root, "kernel_launch_us", 0.0, limits::kMaxLatencyMicroseconds));
    if (auto g = root.find("gemm"))
        for (const auto& item : g->items()) p.gemm.push_back(parse_gemm(item));
    if (auto b = root.find("batched_gemm"))
        for (const auto& item : b->items()) p.batched_gemm.push_back(parse_batched_gemm(item));
    if (auto m = root.find("memory"))
        for (const auto& item : m->items()) p.memory.push_back(parse_memory(item));
    if (auto a = root.find("attention"))
        for (const auto& item : a->items()) p.attention.push_back(parse_attention(item));
    if (auto c = root.find("collectives"))
        for (const auto& item : c->items()) p.collectives.push_back(parse_collective(item));
    if (auto h = root.find("host")) p.host = parse_host_dispatch(*h);
    return p;
}

HardwareProfile HardwareProfile::load(const std::string& path) {
    return parse(read_input_file(path, kMaxYamlFileBytes, "hardware profile"), path);
}

const CollectiveSample* HardwareProfile::collective(sim::OpKind kind, int ranks, int nodes,
                                                    const std::string& algorithm) const {
    if (kind == sim::OpKind::Recv) kind = sim::OpKind::Send;
    const CollectiveSample* best = nullptr;
    int best_score = -1;
    for (const auto& c : collectives) {
        if (c.kind != kind || c.ranks != ranks || (c.nodes != 0 && c.nodes != nodes)) continue;
        if (c.algorithm != algorithm && c.algorithm != "auto") continue;
        const int score = (c.nodes == nodes ? 2 : 0) + (c.algorithm == algorithm ? 1 : 0);
        if (score > best_score) best = &c, best_score = score;
    }
    return best;
}

}  // namespace cuboid::hw
