// Error statistics of predictions against measurements.
#pragma once

#include <vector>

namespace cuboid::validate {

// Signed relative error (predicted - measured) / measured.
double relative_error(double predicted, double measured);
// Mean of |relative error| over the pairs (0 for none).
double mean_absolute_percentage_error(const std::vector<double>& predicted, const std::vector<double>& measured);
// Spearman rank correlation; ties get their average rank. NaN for fewer than 2 pairs.
double spearman(const std::vector<double>& a, const std::vector<double>& b);
// Ranks 1..n (average rank for ties).
std::vector<double> ranks(const std::vector<double>& values);

}  // namespace cuboid::validate
