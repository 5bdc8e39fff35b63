// Durations computed from inputs (a size over a bandwidth, FLOPs over a rate) become ticks here,
// checked: a duration the integer clock cannot hold (beyond about 106 days, or not a number) is a
// TimeOverflow naming the duration, never a wrapped-around negative time that the event queue
// would only report as an event scheduled in the past. The callers that price ops and flows use
// these; run_scenario reports a TimeOverflow as an input error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "sim/units.hpp"

namespace cuboid {

class TimeOverflow : public std::overflow_error {
public:
    explicit TimeOverflow(double seconds) : std::overflow_error(describe(seconds)) {}

private:
    static std::string describe(double seconds) {
        return "a simulated duration of " + std::to_string(seconds) +
               " s is beyond the simulator's clock (at most 9.2e6 s, about 106 days): a bandwidth, rate, latency "
               "or size of the input is out of proportion";
    }
};

// 2^63 picoseconds: the first tick count an int64 cannot hold (exact as a double).
inline constexpr double kClockLimitTicks = 9223372036854775808.0;

// Ticks (rounded up) to at most kClockLimitTicks, else TimeOverflow.
inline std::int64_t checked_ticks(double ticks) {
    if (!(ticks >= 0.0 && ticks < kClockLimitTicks))
        throw TimeOverflow(ticks / static_cast<double>(kPicosecondsPerSecond));
    return static_cast<std::int64_t>(ticks);
}

// to_time() for a duration that comes from the inputs.
inline Time checked_time(double seconds) {
    const double ticks = seconds * static_cast<double>(kPicosecondsPerSecond);
    if (!(ticks > -kClockLimitTicks && ticks < kClockLimitTicks)) throw TimeOverflow(seconds);
    return to_time(seconds);
}

inline Time checked_transfer_time(Bytes b, BytesPerSecond r) { return checked_time(b.value / r.value); }
inline Time checked_compute_time(Flops f, FlopsPerSecond r) { return checked_time(f.value / r.value); }

}  // namespace cuboid
