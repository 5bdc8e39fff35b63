// The ranges outside which an input number cannot describe real hardware or a real budget. Every
// file format checks its numbers against these, so that no value reaches the simulator's integer
// clock (picoseconds) as an overflow, and no output holds an infinite or undefined number.
#pragma once

namespace cuboid::hw::limits {

// Bandwidths: from 1 bit/s to 1 Pbit/s, in the units the inputs use.
inline constexpr double kMinGigabytesPerSecond = 1.0 / 8e9;  // 1 bit/s in GB/s
inline constexpr double kMaxGigabytesPerSecond = 1.25e5;     // 1 Pbit/s in GB/s
inline constexpr double kMinGigabitsPerSecond = 1e-9;        // 1 bit/s in Gbit/s
inline constexpr double kMaxGigabitsPerSecond = 1e6;         // 1 Pbit/s in Gbit/s

// A collective's bus bandwidth in a profile: from 1 kB/s (a measurement that slow is broken) to
// 1 Pbit/s.
inline constexpr double kMinBusGigabytesPerSecond = 1e-6;

// A fixed latency (kernel launch, collective start-up): at most one second.
inline constexpr double kMaxLatencyMicroseconds = 1e6;

// Budgets: a price per GPU-hour, a node's power, a token count far above any training run.
inline constexpr double kMaxGpuHourUsd = 1e6;
inline constexpr double kMaxNodePowerKw = 1e4;
inline constexpr double kMaxGpuPowerWatts = 1e5;
inline constexpr double kMaxTrainingTokens = 1e18;
inline constexpr double kMaxPue = 10.0;
// Owning a cluster: a GPU's purchase price, electricity, the machines' useful life, the share of
// it they are in use (above 0: a machine never used has no cost per training).
inline constexpr double kMaxGpuPurchaseUsd = 1e7;
inline constexpr double kMaxPowerUsdPerKwh = 10.0;
inline constexpr double kMinAmortisationYears = 0.1;
inline constexpr double kMaxAmortisationYears = 30.0;
inline constexpr double kMinUtilisation = 0.01;
inline constexpr double kMaxOversubscription = 1e3;

}  // namespace cuboid::hw::limits
