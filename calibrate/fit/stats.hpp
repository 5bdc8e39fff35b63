// Order statistics of repeated timings (header-only, C++17: used by the CUDA timing code too).
#pragma once

#include <algorithm>
#include <vector>

namespace cuboid::calibrate {

// Median of the samples (mean of the two middle ones for an even count); 0 for none. The median,
// not the mean, because a timing series has one-sided outliers (clock ramp, a preempting
// process) that would drag a mean upwards.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    const std::size_t h = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
    const double upper = v[h];
    if (v.size() % 2 == 1) return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
    return 0.5 * (lower + upper);
}

}  // namespace cuboid::calibrate
