#include <catch2/catch.hpp>

#include <cmath>

#include "validate/published/statistics.hpp"

using namespace cuboid::validate;

TEST_CASE("relative error and MAPE", "[validate]") {
    // (90 - 100) / 100 = -0.1; (220 - 200) / 200 = +0.1; MAPE = (0.1 + 0.1) / 2.
    CHECK(relative_error(90.0, 100.0) == Approx(-0.1));
    CHECK(mean_absolute_percentage_error({90.0, 220.0}, {100.0, 200.0}) == Approx(0.1));
    CHECK(mean_absolute_percentage_error({}, {}) == 0.0);
}

TEST_CASE("ranks average ties", "[validate]") {
    // Sorted: 1 (rank 1), 5 and 5 (ranks 2 and 3 -> 2.5 each), 9 (rank 4).
    const auto r = ranks({5.0, 1.0, 9.0, 5.0});
    CHECK(r == std::vector<double>{2.5, 1.0, 4.0, 2.5});
}

TEST_CASE("Spearman rank correlation", "[validate]") {
    // Any increasing transform keeps the order: rho = 1; reversing it gives -1.
    CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 400}) == Approx(1.0));
    CHECK(spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
    // Without ties rho = 1 - 6 sum d^2 / (n (n^2 - 1)); one swap of neighbours in n = 4:
    // d = (0, 1, -1, 0), sum d^2 = 2 -> 1 - 12 / 60 = 0.8.
    CHECK(spearman({1, 2, 3, 4}, {1, 3, 2, 4}) == Approx(0.8));
    CHECK(std::isnan(spearman({1.0}, {2.0})));
}
