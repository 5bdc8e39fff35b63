#include "hardware_models/catalog_parse.hpp"

#include <fmt/format.h>

namespace cuboid::hw {

std::optional<sim::Precision> precision_from_name(const std::string& name) {
    using P = sim::Precision;
    for (P p : {P::Fp32, P::Tf32, P::Fp16, P::Bf16, P::Fp8})
        if (name == precision_name(p)) return p;
    return std::nullopt;
}

double number_in(const YamlReader& r, const std::string& name, double lo, double hi) {
    const YamlReader v = r.at(name);
    const double x = v.number();
    if (x < lo || x > hi) v.fail(fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
}

EfficiencyCurve parse_efficiency_curve(const YamlReader& r) {
    EfficiencyCurve curve;
    for (const auto& item : r.items()) {
        const auto pair = item.items();
        if (pair.size() != 2) item.fail("expected [size, efficiency]");
        const double size = pair[0].number();
        const double eff = pair[1].number();
        if (size <= 0.0) pair[0].fail("size must be > 0");
        if (eff <= 0.0 || eff > 1.0) pair[1].fail("efficiency must be in (0, 1]");
        if (!curve.points.empty() && size <= curve.points.back().size)
            pair[0].fail("sizes must be ascending");
        curve.points.push_back({size, eff});
    }
    if (curve.points.empty()) r.fail("an efficiency curve needs at least one point");
    return curve;
}

static void parse_peaks(const YamlReader& r, GpuSpec& g) {
    g.peak_fp32 = teraflops(number_in(r, "fp32", 0.0, 1e6));
    g.peak_tf32 = teraflops(number_in(r, "tf32", 0.0, 1e6));
    g.peak_fp16 = teraflops(number_in(r, "fp16", 0.0, 1e6));
    g.peak_bf16 = teraflops(number_in(r, "bf16", 0.0, 1e6));
    g.peak_fp8 = teraflops(number_in(r, "fp8", 0.0, 1e6));
    if (g.peak_fp32.value <= 0.0) r.at("fp32").fail("fp32 peak must be > 0");
}

GpuSpec parse_gpu(const YamlReader& r) {
    GpuSpec g;
    g.name = r.text("name");
    if (auto a = r.find("aliases")) g.aliases = a->texts();
    g.description = r.text("description");
    g.architecture = r.text("architecture");
    parse_peaks(r.at("peak_tflops"), g);
    g.memory_capacity = gibibytes(number_in(r, "memory_gib", 1e-3, 1e6));
    g.memory_bandwidth = BytesPerSecond(number_in(r, "memory_bandwidth_tb_per_s", 1e-3, 1e3) * 1e12);
    g.sm_count = r.integer("sm_count");
    g.tdp_watts = number_in(r, "tdp_w", 1.0, 1e5);
    g.scaleup_bandwidth = gigabytes_per_second(number_in(r, "scaleup_gb_per_s", 0.0, 1e5));
    g.host_link_bandwidth = gigabytes_per_second(number_in(r, "host_link_gb_per_s", 0.1, 1e5));
    if (auto copy = r.find("host_copy_gb_per_s")) {
        g.host_copy_d2h = gigabytes_per_second(number_in(*copy, "device_to_host", 0.1, 1e5));
        g.host_copy_h2d = gigabytes_per_second(number_in(*copy, "host_to_device", 0.1, 1e5));
    }
    g.kernel_launch = microseconds(number_in(r, "kernel_launch_us", 0.0, 1e4));
    g.gemm_efficiency = parse_efficiency_curve(r.at("gemm_efficiency"));
    g.memory_efficiency = parse_efficiency_curve(r.at("memory_efficiency"));
    if (auto by = r.find("gemm_efficiency_by_precision")) {
        for (const auto& [name, curve] : by->entries()) {
            const auto p = precision_from_name(name);
            if (!p) curve.fail("unknown precision (allowed: fp32, tf32, fp16, bf16, fp8)");
            g.gemm_efficiency_by_precision.emplace_back(*p, parse_efficiency_curve(curve));
        }
    }
    if (auto a = r.find("attention_efficiency")) {
        g.attention_forward = parse_efficiency_curve(a->at("forward"));
        g.attention_backward = parse_efficiency_curve(a->at("backward"));
    }
    if (auto sys = r.find("system")) {
        GpuSystem m;
        m.name = sys->text("name");
        const auto count = [&](const char* key) {
            const int n = sys->integer(key);
            if (n < 1) sys->at(key).fail("must be >= 1");
            return n;
        };
        m.gpus_per_node = count("gpus_per_node");
        m.scale_up_domain = count("scale_up_domain");
        m.nics_per_node = count("nics_per_node");
        m.nic_gbps = number_in(*sys, "nic_gbps", 1e-3, 1e6);
        if (m.scale_up_domain % m.gpus_per_node != 0)
            sys->at("scale_up_domain").fail("must be a whole number of nodes (a multiple of gpus_per_node)");
        g.system = m;
    }
    g.source = r.text_or("source", "");
    return g;
}

static LinkClass parse_link_class(const YamlReader& r) {
    const std::string s = r.text();
    if (s == "nvlink") return LinkClass::NvLink;
    if (s == "pcie") return LinkClass::Pcie;
    if (s == "network") return LinkClass::Network;
    r.fail("unknown link class '" + s + "' (allowed: nvlink, pcie, network)");
}

NodeKindSpec parse_node_kind(const YamlReader& r) {
    NodeKindSpec n;
    n.name = r.text("name");
    n.kind = parse_intra_node_kind(n.name, r.at("name").where());
    n.description = r.text("description");
    n.link_class = parse_link_class(r.at("link_class"));
    n.protocol_efficiency = number_in(r, "protocol_efficiency", 0.01, 1.0);
    n.nccl_ring_step = microseconds(number_in(r, "nccl_ring_step_us", 0.0, 1e4));
    n.nccl_tree_step = microseconds(number_in(r, "nccl_tree_step_us", 0.0, 1e4));
    n.gpus_per_switch = r.integer("gpus_per_switch");
    n.source = r.text_or("source", "");
    return n;
}

NetworkKindSpec parse_network_kind(const YamlReader& r) {
    NetworkKindSpec n;
    n.name = r.text("name");
    n.kind = parse_inter_node_kind(n.name, r.at("name").where());
    n.description = r.text("description");
    n.protocol_efficiency = number_in(r, "protocol_efficiency", 0.01, 1.0);
    n.switch_latency = microseconds(number_in(r, "switch_latency_us", 0.0, 1e4));
    for (const auto& g : r.at("generations").items()) {
        NetworkGeneration gen{g.text("name"), number_in(g, "gbit_per_s", 1e-3, 1e6),
                              static_cast<int>(number_in(g, "switch_radix", 2, 1e5))};
        if (!n.generations.empty() && gen.gbit_per_s <= n.generations.back().gbit_per_s)
            g.fail("generations must be in ascending rate");
        n.generations.push_back(gen);
    }
    if (n.generations.empty()) r.at("generations").fail("at least one generation is needed");
    n.source = r.text_or("source", "");
    return n;
}

NcclConstants parse_nccl(const YamlReader& r) {
    NcclConstants c;
    c.ring_base = microseconds(number_in(r, "ring_base_us", 0.0, 1e5));
    c.tree_base = microseconds(number_in(r, "tree_base_us", 0.0, 1e5));
    c.net_ring_step = microseconds(number_in(r, "net_ring_step_us", 0.0, 1e5));
    c.net_tree_step = microseconds(number_in(r, "net_tree_step_us", 0.0, 1e5));
    c.net_overhead = microseconds(number_in(r, "net_overhead_us", 0.0, 1e5));
    const YamlReader table = r.at("tree_allreduce_correction");
    for (const YamlReader& item : table.items()) {
        const double f = item.number();
        if (f <= 0.0 || f > 1.0) item.fail(fmt::format("{} is out of range (0, 1]", f));
        c.tree_allreduce_correction.push_back(f);
    }
    // 2^57 x 64 B is past any buffer; a longer table would only hold unreachable entries.
    if (c.tree_allreduce_correction.empty() || c.tree_allreduce_correction.size() > 57)
        table.fail("a list of 1 to 57 factors is expected, one per power-of-two size from 64 B");
    c.source = r.text_or("source", "");
    return c;
}

}  // namespace cuboid::hw
