// `cuboid search` across the ranks of an MPI job (mpirun -np N, srun): every rank builds the same
// candidates and takes an interleaved share of them (SearchOptions::share_rank, share_size);
// it checks its share and simulates its feasible plans in bound order while they can enter its
// own top `keep`. A plan of the global top `keep` is in its rank's top `keep`, so it is simulated
// there: rank 0 merges the shares into one result whose ranking and top plans are the ones a
// single process finds. What can differ is the work: a rank whose own best plans are slower than
// the global ones admits plans a single process would prune by the bound, so the counts (and the
// rows of plans simulated beyond the top) may be larger.
//
// A share travels as CBOR: the simulated plans' candidate indices and outcomes as a sweep share
// (sweep_outcome_codec.hpp, every double as its 8 bytes), their bounds, the counts, the first
// invalid plan's message, an internal error and a stop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strategies/cli/search_run.hpp"
#include "strategies/cli/search_space.hpp"

namespace cuboid::cli {

// One rank's search as sent to rank 0; `failure`: why the rank could not search (empty: it did).
std::vector<std::uint8_t> encode_search_share(const SearchResult& r, const std::string& failure);

struct SearchShare {
    SearchResult result;  // plans hold outcomes only: the points are filled in by merge_search_shares
    std::string failure;
};
// Throws std::runtime_error on bytes that are not an encoded search share.
SearchShare decode_search_share(const std::vector<std::uint8_t>& bytes);

// The shares of every rank as one search over `candidates`: the simulated plans in bound order
// (ties by candidate index), counts summed, the first message of the lowest rank that has one.
// `first` is rank 0's own result (its name, source file, threads, clusters and times are kept).
// Throws std::runtime_error naming the rank when a share failed or names a candidate that is not.
SearchResult merge_search_shares(std::vector<SearchShare> shares, const SearchCandidates& candidates,
                                 const SearchResult& first);

}  // namespace cuboid::cli
