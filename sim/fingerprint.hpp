// The determinism fingerprint: a 64-bit digest of every op completion (time, rank, op).
//
// Each completion is mixed with splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014) and the mixes are summed. The sum does not depend on the order
// in which simultaneous completions are processed, so merged compute chains (which report their
// ops when the chain ends) give the same value as op-by-op execution; any change in any
// completion time, rank or op changes it.
//
// A completion's digest is mix(time, op) x key(rank), with an odd key per rank. The product form
// lets a folded simulation (sim/fold.hpp), which runs one rank for a whole orbit of ranks with
// identical timelines, add mix(time, op) x (sum of the orbit's keys): the same sum, modulo 2^64,
// as the full simulation's.
#pragma once

#include <cstdint>

namespace cuboid::sim {

inline constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

inline constexpr std::uint64_t completion_mix(std::int64_t time, std::uint32_t op) {
    return splitmix64(splitmix64(static_cast<std::uint64_t>(time)) ^ op);
}

// Odd, so that multiplying by it loses no bit of the mix.
inline constexpr std::uint64_t rank_key(std::uint32_t rank) { return splitmix64(0x5eed0000ULL + rank) | 1U; }

inline constexpr std::uint64_t completion_digest(std::int64_t time, std::uint32_t rank, std::uint32_t op) {
    return completion_mix(time, op) * rank_key(rank);
}

}  // namespace cuboid::sim
