#include "strategies/cli/sweep_points.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "sim/checked_math.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"

namespace cuboid::cli {

std::size_t sweep_point_count(const SweepAxes& axes) {
    if (axes.empty()) return 0;
    std::size_t n = 1;
    for (const auto& [key, values] : axes)  // saturates: a count past 2^64 must not wrap to a small one
        n = sim::checked_mul(n, values.size()).value_or(std::numeric_limits<std::size_t>::max());
    return n;
}

void check_sweep_size(const Scenario& base) {
    const std::size_t n = sweep_point_count(base.sweep);
    if (n <= kMaxSweepPoints) return;
    std::string sizes;
    for (const auto& [key, values] : base.sweep) sizes += fmt::format("{}{} {}", sizes.empty() ? "" : " x ", key, values.size());
    const std::string count = n == std::numeric_limits<std::size_t>::max() ? "more than 2^64" : fmt::format("{}", n);
    throw InputError(base.where("sweep"), fmt::format("{} points ({}): more than the {} points a sweep may have; "
                                                      "split it into several sweeps",
                                                      count, sizes, kMaxSweepPoints));
}

std::vector<SweepPoint> sweep_points(const SweepAxes& axes) {
    const std::size_t count = sweep_point_count(axes);
    std::vector<SweepPoint> points;
    points.reserve(count);
    // Point i written in mixed radix: the last axis is the least significant digit.
    for (std::size_t i = 0; i < count; ++i) {
        SweepPoint p(axes.size());
        std::size_t rest = i;
        for (std::size_t a = axes.size(); a-- > 0;) {
            const auto& values = axes[a].second;
            p[a] = values[rest % values.size()];
            rest /= values.size();
        }
        points.push_back(std::move(p));
    }
    return points;
}

Scenario point_scenario(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                        const NameResolvers& names) {
    Scenario s = base;
    s.sweep.clear();
    const SetContext ctx{names, std::filesystem::path(base.source_file).parent_path()};
    // A model.preset or model.hf_config axis replaces the whole model, so it goes first and the
    // other model axes still apply on top of it (the order --set uses).
    for (const bool presets : {true, false})
        for (std::size_t a = 0; a < axes.size(); ++a) {
            const std::string& key = axes[a].first;
            if (replaces_model(key) != presets) continue;
            const KeyDef* def = find_key(key);
            if (!def || !def->set) throw InputError(locate(base, "sweep." + key), "cannot be swept");
            def->set(s, point[a], locate(base, "sweep." + key), ctx);
        }
    return s;
}

void reject_swept_overrides(const SweepAxes& axes, const std::vector<std::string>& overridden) {
    for (const auto& key : overridden) {
        const bool swept = std::any_of(axes.begin(), axes.end(), [&](const auto& axis) { return axis.first == key; });
        if (swept)
            throw InputError({std::string(kOverrideFile), 0, key},
                             fmt::format("is swept by the scenario's sweep: section; a --set on it would be "
                                         "replaced at every point (remove the --set, or edit the sweep list)"));
    }
}

}  // namespace cuboid::cli
