// The determinism fingerprint: a 64-bit digest of every op completion (time, rank, op).
//
// Each completion is mixed with splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014) and the mixes are summed. The sum does not depend on the order
// in which simultaneous completions are processed, so merged compute chains (which report their
// ops when the chain ends) give the same value as op-by-op execution; any change in any
// completion time, rank or op changes it.
#pragma once

#include <cstdint>

namespace cuboid::sim {

inline constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

inline constexpr std::uint64_t completion_digest(std::int64_t time, std::uint32_t rank, std::uint32_t op) {
    const std::uint64_t who = (static_cast<std::uint64_t>(rank) << 32) | op;
    return splitmix64(splitmix64(static_cast<std::uint64_t>(time)) ^ who);
}

}  // namespace cuboid::sim
