// Products and sums of counts that users size (nodes, GPUs per node, layers, micro-batches, sweep
// points) computed without signed overflow: an empty result when the exact value does not fit the
// type, so that the caller can report the keys that made it too large instead of running on a
// wrapped number.
#pragma once

#include <concepts>
#include <optional>

namespace cuboid::sim {

template <std::integral T>
std::optional<T> checked_mul(T a, T b) {
    T out{};
    if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
    return out;
}

template <std::integral T>
std::optional<T> checked_add(T a, T b) {
    T out{};
    if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
    return out;
}

}  // namespace cuboid::sim
