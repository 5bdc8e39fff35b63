#include "calibrate/fit/passes.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "calibrate/fit/stats.hpp"

namespace cuboid::calibrate {
namespace {

// What identifies a point across passes.
auto key(const GemmPoint& p) { return std::tie(p.precision, p.m, p.n, p.k, p.batch); }
auto key(const MemoryPoint& p) { return std::tie(p.kernel, p.bytes); }
auto key(const CopyPoint& p) { return std::tie(p.direction, p.bytes); }

template <class Point>
std::vector<Point> merge(const std::vector<Measurements>& passes, std::vector<Point> Measurements::*points) {
    std::vector<Point> out = passes.front().*points;
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::vector<double> seconds;
        for (const Measurements& pass : passes) {
            const auto& v = pass.*points;
            if (v.size() != out.size() || key(v[i]) != key(out[i]))
                throw std::logic_error("calibration passes measured different points");
            seconds.push_back(v[i].seconds);
        }
        out[i].seconds = median(seconds);
    }
    return out;
}

std::optional<double> merge(const std::vector<Measurements>& passes, std::optional<double> Measurements::*figure) {
    std::vector<double> v;
    for (const Measurements& pass : passes)
        if (pass.*figure) v.push_back(*(pass.*figure));
    if (v.empty()) return std::nullopt;
    return median(v);
}

}  // namespace

Measurements median_of_passes(const std::vector<Measurements>& passes) {
    if (passes.empty()) throw std::logic_error("no calibration pass to merge");
    Measurements m = passes.front();
    m.launch_seconds = merge(passes, &Measurements::launch_seconds);
    m.launch_sync_seconds = merge(passes, &Measurements::launch_sync_seconds);
    m.gemm = merge(passes, &Measurements::gemm);
    m.batched_gemm = merge(passes, &Measurements::batched_gemm);
    m.memory = merge(passes, &Measurements::memory);
    m.copies = merge(passes, &Measurements::copies);
    return m;
}

}  // namespace cuboid::calibrate
