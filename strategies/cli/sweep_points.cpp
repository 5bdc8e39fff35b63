#include "strategies/cli/sweep_points.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"

namespace cuboid::cli {

std::size_t sweep_point_count(const SweepAxes& axes) {
    if (axes.empty()) return 0;
    std::size_t n = 1;
    for (const auto& [key, values] : axes) n *= values.size();
    return n;
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
    // A model.preset axis replaces the whole model, so it goes first and the other model axes
    // still apply on top of it (the order --set uses).
    for (const bool presets : {true, false})
        for (std::size_t a = 0; a < axes.size(); ++a) {
            const std::string& key = axes[a].first;
            if ((key == "model.preset") != presets) continue;
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
