#include "validate/published/modern_summary.hpp"

#include <cmath>
#include <map>
#include <tuple>

#include <fmt/core.h>

#include "validate/published/statistics.hpp"

namespace cuboid::validate {
namespace {

bool simulated(const ModernRow& r) { return r.check.expressible && r.check.failure.empty(); }

ErrorFigures errors(const std::vector<const ModernRow*>& rows) {
    ErrorFigures f;
    std::vector<double> predicted, measured;
    for (const ModernRow* r : rows) {
        predicted.push_back(r->check.predicted_s);
        measured.push_back(r->check.measured_s);
        const double e = std::abs(relative_error(r->check.predicted_s, r->check.measured_s));
        if (e >= f.worst) {
            f.worst = e;
            f.worst_row = r->check.label;
        }
    }
    f.simulated = static_cast<int>(rows.size());
    f.mape = mean_absolute_percentage_error(predicted, measured);
    return f;
}

// Per-GPU throughput of a row, measured or predicted (tokens per second per GPU).
double per_gpu(const ModernRow& r, double seconds) { return r.tokens / (seconds * r.gpus); }

std::vector<WeakScaling> weak_scaling(const std::vector<ModernRow>& rows) {
    using Key = std::tuple<std::string, std::string, std::string, std::string>;
    std::map<Key, std::pair<const ModernRow*, const ModernRow*>> ends;  // fewest and most GPUs
    for (const ModernRow& r : rows) {
        if (!simulated(r)) continue;
        auto [it, fresh] = ends.try_emplace(Key{r.block, r.check.group, r.gpu, r.precision}, &r, &r);
        if (fresh) continue;
        if (r.gpus < it->second.first->gpus) it->second.first = &r;
        if (r.gpus > it->second.second->gpus) it->second.second = &r;
    }
    std::vector<WeakScaling> out;
    for (const auto& [key, pair] : ends) {
        const auto [small, large] = pair;
        if (small->gpus == large->gpus) continue;
        out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), small->gpus, large->gpus,
                       per_gpu(*large, large->check.measured_s) / per_gpu(*small, small->check.measured_s) - 1.0,
                       per_gpu(*large, large->check.predicted_s) / per_gpu(*small, small->check.predicted_s) - 1.0});
    }
    return out;
}

void print_errors(const ErrorFigures& f) {
    fmt::print("MAPE {:.1f}%, worst row {:.1f}%", 100 * f.mape, 100 * f.worst);
    if (!f.worst_row.empty()) fmt::print(" ({})", f.worst_row);
}

}  // namespace

ModernSummary summarise_modern(const std::vector<ModernRow>& rows) {
    ModernSummary s;
    std::vector<const ModernRow*> all, subset;
    for (const ModernRow& r : rows) {
        ++s.rows;
        if (r.h100_dense) ++s.subset_rows;
        if (!r.check.expressible) continue;
        ++s.expressible;
        if (!r.check.failure.empty()) {
            ++s.failures;
            continue;
        }
        s.out_of_memory += r.check.out_of_memory();
        all.push_back(&r);
        if (r.h100_dense) subset.push_back(&r);
    }
    s.all = errors(all);
    s.subset = errors(subset);
    s.scaling = weak_scaling(rows);
    return s;
}

bool print_modern_summary(const ModernSummary& s) {
    fmt::print("modern: {} of {} rows expressible; ", s.expressible, s.rows);
    print_errors(s.all);
    fmt::print(", failed rows {}, rows out of memory {}\n", s.failures, s.out_of_memory);
    fmt::print("  dense H100 rows without context or expert parallelism: {} simulated of {}; ", s.subset.simulated,
               s.subset_rows);
    print_errors(s.subset);
    fmt::print(" (targets: MAPE <= {:.0f}%, every row within {:.0f}%)\n", 100 * kModernSubsetMape,
               100 * kModernSubsetWorst);
    for (const WeakScaling& w : s.scaling)
        fmt::print("  weak scaling {}: {} on {} ({}), {} -> {} GPUs: per-GPU throughput measured {:+.1f}%, "
                   "predicted {:+.1f}% ({:+.1f} points)\n",
                   w.block, w.model, w.gpu, w.precision, w.gpus_from, w.gpus_to, 100 * w.measured_change,
                   100 * w.predicted_change, 100 * (w.predicted_change - w.measured_change));
    if (s.scaling.empty()) fmt::print("  weak scaling: no model simulated at two GPU counts within a block\n");
    return s.failures == 0 && s.out_of_memory == 0 && s.subset.simulated > 0 && s.subset.mape <= kModernSubsetMape &&
           s.subset.worst <= kModernSubsetWorst;
}

}  // namespace cuboid::validate
