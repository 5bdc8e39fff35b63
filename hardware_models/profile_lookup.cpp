// Interpolation in a calibrated profile's measurements.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "hardware_models/collectives.hpp"
#include "hardware_models/profile.hpp"
#include "sim/time_overflow.hpp"

namespace cuboid::hw {
namespace {

using Shape = std::array<double, 3>;  // log m, log n, log k

Shape log_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
    return {std::log(double(m)), std::log(double(n)), std::log(double(k))};
}

// The grid values that bracket x (equal when x is on the grid); none outside the grid.
bool bracket(const std::vector<double>& grid, double x, double& lo, double& hi) {
    if (grid.empty() || x < grid.front() - 1e-12 || x > grid.back() + 1e-12) return false;
    const auto it = std::lower_bound(grid.begin(), grid.end(), x - 1e-12);
    hi = *it;
    lo = (std::abs(*it - x) < 1e-9 || it == grid.begin()) ? *it : *(it - 1);
    return true;
}

const GemmSample* find_sample(const std::vector<const GemmSample*>& samples, const Shape& s) {
    for (const auto* g : samples) {
        const Shape t = log_shape(g->m, g->n, g->k);
        if (std::abs(t[0] - s[0]) < 1e-9 && std::abs(t[1] - s[1]) < 1e-9 && std::abs(t[2] - s[2]) < 1e-9)
            return g;
    }
    return nullptr;
}

// Trilinear in log space over the 8 corners of the enclosing grid cell, if all were measured.
std::optional<double> trilinear(const std::vector<const GemmSample*>& samples, const Shape& q) {
    std::array<std::vector<double>, 3> grid;
    for (const auto* g : samples) {
        const Shape t = log_shape(g->m, g->n, g->k);
        for (int d = 0; d < 3; ++d) grid[d].push_back(t[d]);
    }
    std::array<double, 3> lo{}, hi{}, w{};
    for (int d = 0; d < 3; ++d) {
        std::sort(grid[d].begin(), grid[d].end());
        if (!bracket(grid[d], q[d], lo[d], hi[d])) return std::nullopt;
        w[d] = hi[d] > lo[d] ? (q[d] - lo[d]) / (hi[d] - lo[d]) : 0.0;
    }
    double value = 0.0;
    for (int corner = 0; corner < 8; ++corner) {
        Shape c{};
        double weight = 1.0;
        for (int d = 0; d < 3; ++d) {
            const bool up = (corner >> d) & 1;
            c[d] = up ? hi[d] : lo[d];
            weight *= up ? w[d] : 1.0 - w[d];
        }
        if (weight == 0.0) continue;
        const GemmSample* s = find_sample(samples, c);
        if (!s) return std::nullopt;
        value += weight * s->tflops;
    }
    return value;
}

double nearest(const std::vector<const GemmSample*>& samples, const Shape& q) {
    double best = std::numeric_limits<double>::max(), tflops = 0.0;
    for (const auto* g : samples) {
        const Shape t = log_shape(g->m, g->n, g->k);
        const double d = (t[0] - q[0]) * (t[0] - q[0]) + (t[1] - q[1]) * (t[1] - q[1]) +
                         (t[2] - q[2]) * (t[2] - q[2]);
        if (d < best) best = d, tflops = g->tflops;
    }
    return tflops;
}

}  // namespace

std::optional<FlopsPerSecond> HardwareProfile::gemm_rate(sim::Precision p, std::int64_t m,
                                                         std::int64_t n, std::int64_t k) const {
    std::vector<const GemmSample*> samples;
    for (const auto& g : gemm)
        if (g.precision == p) samples.push_back(&g);
    if (samples.empty() || m <= 0 || n <= 0 || k <= 0) return std::nullopt;
    const Shape q = log_shape(m, n, k);
    const auto t = trilinear(samples, q);
    return teraflops(t ? *t : nearest(samples, q));
}

std::optional<FlopsPerSecond> HardwareProfile::batched_gemm_rate(sim::Precision p, std::int64_t m,
                                                                 std::int64_t n, std::int64_t k,
                                                                 std::int64_t batch) const {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return std::nullopt;
    const std::array<double, 4> q{std::log(double(m)), std::log(double(n)), std::log(double(k)),
                                  std::log(double(batch))};
    // The two nearest measured shapes (attention's shapes are not a full grid, so no multilinear
    // cell exists: QK^T moves m and n together, PV m and k).
    double d1 = std::numeric_limits<double>::max(), d2 = d1, r1 = 0.0, r2 = 0.0;
    for (const auto& s : batched_gemm) {
        if (s.precision != p) continue;
        const std::array<double, 4> t{std::log(double(s.m)), std::log(double(s.n)), std::log(double(s.k)),
                                      std::log(double(s.batch))};
        double d = 0.0;
        for (std::size_t i = 0; i < 4; ++i) d += (t[i] - q[i]) * (t[i] - q[i]);
        if (d < d1) d2 = d1, r2 = r1, d1 = d, r1 = s.tflops;
        else if (d < d2) d2 = d, r2 = s.tflops;
    }
    if (d1 == std::numeric_limits<double>::max()) return std::nullopt;
    if (d1 < 1e-18 || d2 == std::numeric_limits<double>::max()) return teraflops(r1);
    const double w1 = 1.0 / d1, w2 = 1.0 / d2;
    return teraflops((w1 * r1 + w2 * r2) / (w1 + w2));
}

std::optional<FlopsPerSecond> HardwareProfile::attention_rate(bool backward, std::int64_t keys,
                                                             std::int64_t head_dim) const {
    if (keys <= 0 || head_dim <= 0) return std::nullopt;
    // The measured head dimension nearest in log space, then its samples bracketing log(keys).
    double best = std::numeric_limits<double>::max();
    std::int64_t dim = 0;
    for (const auto& s : attention) {
        if (s.backward != backward) continue;
        const double d = std::abs(std::log(double(s.head_dim)) - std::log(double(head_dim)));
        if (d < best) best = d, dim = s.head_dim;
    }
    if (dim == 0) return std::nullopt;
    const AttentionSample *below = nullptr, *above = nullptr;
    for (const auto& s : attention) {
        if (s.backward != backward || s.head_dim != dim) continue;
        if (s.keys <= keys && (!below || s.keys > below->keys)) below = &s;
        if (s.keys >= keys && (!above || s.keys < above->keys)) above = &s;
    }
    if (!below) return teraflops(above->tflops);
    if (!above || above->keys == below->keys) return teraflops(below->tflops);
    const double f = (std::log(double(keys)) - std::log(double(below->keys))) /
                     (std::log(double(above->keys)) - std::log(double(below->keys)));
    return teraflops(below->tflops + f * (above->tflops - below->tflops));
}

namespace {

// The samples of one kind around a size, found in one pass without allocating (this runs for
// every distinct memory-bound op priced). Equivalent to sorting the kind's samples by size:
// `below` and `above` are the neighbours that bracket x in that order.
struct MemoryBracket {
    const MemorySample* smallest = nullptr;
    const MemorySample* largest = nullptr;
    const MemorySample* below = nullptr;  // the largest size < x
    const MemorySample* above = nullptr;  // the smallest size >= x
};

MemoryBracket bracket_memory(const std::vector<MemorySample>& memory, const char* kind, double x) {
    MemoryBracket b;
    for (const auto& s : memory) {
        if (s.kind != kind) continue;
        if (!b.smallest || s.bytes < b.smallest->bytes) b.smallest = &s;
        if (!b.largest || s.bytes > b.largest->bytes) b.largest = &s;
        if (s.bytes < x) {
            if (!b.below || s.bytes > b.below->bytes) b.below = &s;
        } else if (!b.above || s.bytes < b.above->bytes) {
            b.above = &s;
        }
    }
    return b;
}

}  // namespace

std::optional<BytesPerSecond> HardwareProfile::memory_rate(sim::OpKind kind, Bytes bytes) const {
    const double x = std::max(bytes.value, 1.0);
    MemoryBracket b;
    for (const char* name : {memory_kind_name(kind), "elementwise"}) {
        b = bracket_memory(memory, name, x);
        if (b.smallest) break;
    }
    if (!b.smallest) return std::nullopt;
    if (x <= b.smallest->bytes) return gigabytes_per_second(b.smallest->gb_per_s);
    if (x >= b.largest->bytes) return gigabytes_per_second(b.largest->gb_per_s);
    // smallest < x < largest: both neighbours exist and below < x <= above.
    const MemorySample* lo = b.below;
    const MemorySample* hi = b.above;
    const double t = std::log(x / lo->bytes) / std::log(hi->bytes / lo->bytes);
    return gigabytes_per_second(lo->gb_per_s + t * (hi->gb_per_s - lo->gb_per_s));
}

namespace {

// Seconds of one call at table point i: nccl-tests' busbw is bus bytes over the whole measured
// time, so the point's time is its bus bytes divided by it.
double point_seconds(const BusBandwidthPoint& p, double factor) {
    return factor * p.bytes / (p.bus_gb_per_s * 1e9);
}

// Time on a piecewise power law through the table (linear in log size, log time): between two
// measured sizes a collective's time changes monotonically from one to the other, and a
// bandwidth that rises with size (latency amortised) is followed without the dips that linear
// interpolation of GB/s would put into the time.
double table_seconds(const CollectiveSample& s, double bytes, double factor) {
    const auto& t = s.table;
    const double beta = s.bus_gb_per_s * 1e9;
    if (bytes >= t.back().bytes) return point_seconds(t.back(), factor) + factor * (bytes - t.back().bytes) / beta;
    if (bytes <= t.front().bytes) {
        const double first = point_seconds(t.front(), factor);
        const double toward_alpha = first - factor * (t.front().bytes - bytes) / beta;
        return std::min(first, std::max(to_seconds(s.alpha), toward_alpha));
    }
    const auto hi = std::lower_bound(t.begin(), t.end(), bytes,
                                     [](const BusBandwidthPoint& p, double b) { return p.bytes < b; });
    if (hi->bytes == bytes) return point_seconds(*hi, factor);
    const auto lo = hi - 1;
    const double w = std::log(bytes / lo->bytes) / std::log(hi->bytes / lo->bytes);
    return std::exp((1.0 - w) * std::log(point_seconds(*lo, factor)) + w * std::log(point_seconds(*hi, factor)));
}

}  // namespace

CollectiveCost CollectiveSample::cost(double bytes) const {
    const double factor = bus_factor(kind, ranks);
    if (table.empty()) return {alpha, bytes * factor / (bus_gb_per_s * 1e9)};
    const double seconds = table_seconds(*this, bytes, factor);
    const Time latency = std::min(alpha, checked_time(seconds));
    return {latency, std::max(0.0, seconds - to_seconds(latency))};
}

}  // namespace cuboid::hw
