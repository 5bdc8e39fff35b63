// The outcomes of a share of a sweep's points as bytes, for sending them from one MPI rank to
// rank 0. Binary CBOR: every double travels as its 8 bytes, so rank 0 ranks and writes exactly
// what a single process would have (no decimal round trip).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strategies/cli/sweep_runner.hpp"

namespace cuboid::cli {

// What one rank sends: the points it finished (their index in the sweep and outcome) and, when
// it failed, why.
struct SweepShare {
    std::vector<std::size_t> indices;
    std::vector<PointOutcome> outcomes;   // at the same position as indices
    std::string failure;                  // empty: the rank did not fail
    int signal = 0;                       // the signal that stopped the rank early; 0: none
};

std::vector<std::uint8_t> encode_share(const SweepShare& share);

// Throws std::runtime_error on bytes that are not an encoded share.
SweepShare decode_share(const std::vector<std::uint8_t>& bytes);

// Puts each outcome of the share at its index (indices out of range are a decoding error).
void merge_share(SweepShare share, std::vector<PointOutcome>& outcomes);

}  // namespace cuboid::cli
