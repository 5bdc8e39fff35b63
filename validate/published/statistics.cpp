#include "validate/published/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cuboid::validate {

double relative_error(double predicted, double measured) { return (predicted - measured) / measured; }

double mean_absolute_percentage_error(const std::vector<double>& predicted, const std::vector<double>& measured) {
    if (predicted.empty()) return 0.0;
    double sum = 0.0;
    for (std::size_t i = 0; i < predicted.size(); ++i) sum += std::abs(relative_error(predicted[i], measured[i]));
    return sum / static_cast<double>(predicted.size());
}

std::vector<double> ranks(const std::vector<double>& values) {
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
    std::vector<double> rank(values.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
        const double average = 0.5 * static_cast<double>(i + j) + 1.0;  // ranks i+1 .. j+1
        for (std::size_t k = i; k <= j; ++k) rank[order[k]] = average;
        i = j + 1;
    }
    return rank;
}

// Pearson correlation of the ranks (the definition that stays right with ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
    const std::size_t n = a.size();
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> ra = ranks(a);
    const std::vector<double> rb = ranks(b);
    const double mean = 0.5 * static_cast<double>(n + 1);
    double cov = 0.0, va = 0.0, vb = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        cov += (ra[i] - mean) * (rb[i] - mean);
        va += (ra[i] - mean) * (ra[i] - mean);
        vb += (rb[i] - mean) * (rb[i] - mean);
    }
    if (va == 0.0 || vb == 0.0) return std::numeric_limits<double>::quiet_NaN();
    return cov / std::sqrt(va * vb);
}

}  // namespace cuboid::validate
