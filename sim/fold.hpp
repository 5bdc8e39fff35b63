// Folded simulation: one rank per orbit of ranks with provably identical timelines
// (symmetry.hpp), on the quotient network. The results are those of the full simulation.
//
// Quotient program: the representative ranks, and one group per orbit of groups (its
// representative), whose members are the distinct representatives of its ranks, each counted
// once. An instance starts when those have posted it (every member of the orbit posts at the same
// time as its representative), and its end advances each representative's stream once.
//
// Quotient network: one flow per flow f of a representative plan, over the representatives of the
// link orbits it crosses, with weight
//     W_[l](f) = |orbit of its group| / |[l]| x (sum of f's weights on the links of orbit [l]).
// Every instance of the group's orbit runs the image of the plan, so the orbit's links together
// carry |orbit| x that sum per byte of f, and by symmetry each carries the same share: W is the
// load of f and its images on one link. Max-min fair sharing on the quotient therefore gives every
// flow the rate its images have in the full network. The quotient network has one link per link
// orbit (numbered in the order of the orbits' representatives), so that the folded run keeps
// network state for a fold's share of the links only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sim/executor.hpp"
#include "sim/symmetry.hpp"

namespace cuboid::sim {

struct FoldedProgram {
    std::vector<std::uint32_t> reps;                  // folded rank -> its (representative) rank
    std::vector<std::uint32_t> folded_rank;           // rank -> folded rank of its representative
    std::vector<RankProgram> ranks;                   // slots name folded groups
    std::vector<Group> groups;                        // members are folded ranks
    std::vector<std::uint32_t> origin;                // folded group -> representative group
    std::vector<std::vector<std::uint32_t>> members;  // folded group, member -> a rank of the group it stands for
    std::vector<std::uint64_t> keys;                  // folded rank -> sum of its orbit's fingerprint keys
};

// nullopt when a representative names two different groups of one orbit (their instances would
// merge).
std::optional<FoldedProgram> fold_program(const Program& program, const ProgramSymmetry& symmetry);

// Runs `program` folded under the proposed candidate generators that pass every check; nullopt
// when none does, or the folded run meets anything unexpected (the caller then simulates in full,
// which reports real errors). `indexes`: index_op_lists(program, costs, options.merge_compute_chains),
// which carry the compute durations.
std::optional<SimResult> simulate_folded(const Program& program, std::span<const OpListIndex> indexes,
                                         std::span<const Link> links, TransferPlanner& planner,
                                         const SimOptions& options);

}  // namespace cuboid::sim
