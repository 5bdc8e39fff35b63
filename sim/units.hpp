// Strong unit types for cuboid. Time is an integer count of picoseconds; every conversion from
// seconds happens in to_time() below (rounding to nearest), so call sites never scale by hand.
// GB in names means 1e9 bytes, GiB 2^30.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace cuboid {

// A value with a unit tag: arithmetic within one unit, scaling by plain numbers, no implicit
// mixing of units (a bandwidth cannot pass for a byte count).
template <class Tag, class Rep>
struct Quantity {
    Rep value{};

    constexpr Quantity() = default;
    constexpr explicit Quantity(Rep v) : value(v) {}

    constexpr auto operator<=>(const Quantity&) const = default;
    constexpr Quantity operator+(Quantity o) const { return Quantity(value + o.value); }
    constexpr Quantity operator-(Quantity o) const { return Quantity(value - o.value); }
    constexpr Quantity& operator+=(Quantity o) { value += o.value; return *this; }
    constexpr Quantity& operator-=(Quantity o) { value -= o.value; return *this; }
    constexpr Quantity operator*(Rep k) const { return Quantity(value * k); }
    constexpr Quantity operator/(Rep k) const { return Quantity(value / k); }
    constexpr double operator/(Quantity o) const {
        return static_cast<double>(value) / static_cast<double>(o.value);
    }
};

struct TimeTag;
struct BytesTag;
struct BandwidthTag;
struct FlopTag;
struct FlopRateTag;

using Time = Quantity<TimeTag, std::int64_t>;         // picoseconds
using Bytes = Quantity<BytesTag, double>;              // bytes (double: fractional flow shares)
using BytesPerSecond = Quantity<BandwidthTag, double>; // bytes per second
using Flops = Quantity<FlopTag, double>;               // floating-point operations (a count)
using FlopsPerSecond = Quantity<FlopRateTag, double>;  // floating-point operations per second

inline constexpr std::int64_t kPicosecondsPerSecond = 1'000'000'000'000;
inline constexpr Time kTimeZero{0};
inline constexpr Time kTimeNever{std::numeric_limits<std::int64_t>::max()};

// The one place where seconds become ticks.
inline Time to_time(double seconds) {
    return Time(static_cast<std::int64_t>(std::llround(seconds * static_cast<double>(kPicosecondsPerSecond))));
}
inline constexpr double to_seconds(Time t) {
    return static_cast<double>(t.value) / static_cast<double>(kPicosecondsPerSecond);
}
inline Time microseconds(double us) { return to_time(us * 1e-6); }
inline Time nanoseconds(double ns) { return to_time(ns * 1e-9); }

inline constexpr Bytes gigabytes(double gb) { return Bytes(gb * 1e9); }
inline constexpr Bytes gibibytes(double gib) { return Bytes(gib * 1073741824.0); }
inline constexpr BytesPerSecond gigabytes_per_second(double gbps) { return BytesPerSecond(gbps * 1e9); }
inline constexpr BytesPerSecond gigabits_per_second(double gbit) { return BytesPerSecond(gbit * 1e9 / 8.0); }
inline constexpr FlopsPerSecond teraflops(double tf) { return FlopsPerSecond(tf * 1e12); }

// Time to move `b` at rate `r` (r > 0).
inline Time transfer_time(Bytes b, BytesPerSecond r) { return to_time(b.value / r.value); }
// Time to execute `f` at rate `r` (r > 0).
inline Time compute_time(Flops f, FlopsPerSecond r) { return to_time(f.value / r.value); }

}  // namespace cuboid
