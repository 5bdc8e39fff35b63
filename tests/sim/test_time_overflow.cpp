// Durations computed from inputs become ticks only when the integer clock can hold them.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "sim/time_overflow.hpp"

using namespace cuboid;

TEST_CASE("checked_time converts what the clock holds and refuses the rest", "[sim][time]") {
    CHECK(checked_time(1.5).value == 1'500'000'000'000);
    CHECK(checked_time(9e6).value == to_time(9e6).value);  // about 104 days: still on the clock
    for (const double seconds : {1e7, 1e300, -1e7, std::numeric_limits<double>::infinity(), std::nan("")})
        CHECK_THROWS_AS(checked_time(seconds), TimeOverflow);
    CHECK_THROWS_WITH(checked_transfer_time(Bytes(1e9), BytesPerSecond(0.125)),
                      Catch::Contains("8000000000") && Catch::Contains("beyond the simulator's clock"));
    CHECK(checked_compute_time(Flops(1e12), FlopsPerSecond(1e12)).value == kPicosecondsPerSecond);
}

TEST_CASE("checked_ticks refuses tick counts beyond 2^63", "[sim][time]") {
    CHECK(checked_ticks(42.0) == 42);
    CHECK_THROWS_AS(checked_ticks(1e19), TimeOverflow);
    CHECK_THROWS_AS(checked_ticks(std::nan("")), TimeOverflow);
}
