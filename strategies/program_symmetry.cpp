#include "strategies/program_symmetry.hpp"

#include <algorithm>

#include "strategies/group_families.hpp"

namespace cuboid {
namespace {

// Every rank moved by `by` along `axis` of `grid`.
sim::RankMap shift(const RankGrid& grid, std::string_view axis, int by) {
    const std::size_t a = grid.index(axis);
    sim::RankMap g(static_cast<std::size_t>(grid.ranks()));
    for (std::uint32_t r = 0; r < g.size(); ++r) g[r] = grid.shifted(r, a, by);
    return g;
}

std::vector<int> proper_divisors(int n) {
    std::vector<int> d;
    for (int b = 1; b < n; ++b) {
        if (n % b == 0) d.push_back(b);
    }
    return d;
}

// The members of each group map into one group.
bool maps_onto_itself(const sim::RankMap& g, const RankGrid::Partition& family) {
    for (const auto& ranks : family.groups) {
        const std::uint32_t target = family.group_of[g[ranks.front()]];
        for (const std::uint32_t r : ranks)
            if (family.group_of[g[r]] != target) return false;
    }
    return true;
}

}  // namespace

std::vector<sim::RankMap> symmetry_generators(const Layout& layout, TensorMode mode) {
    const RankGrid grid = layout.grid();
    std::vector<sim::RankMap> candidates;
    for (const int b : proper_divisors(grid.size(axis::kData))) candidates.push_back(shift(grid, axis::kData, b));
    if (mode == TensorMode::OneD) {
        for (const int b : proper_divisors(layout.tensor)) candidates.push_back(shift(grid, axis::kTensor, b));
        for (const int b : proper_divisors(layout.tensor)) {
            if (b == 1) continue;
            // The tensor axis seen as blocks of b: a shift by one inside the block.
            const RankGrid blocks = grid.resplit(axis::kTensor, axis::kTensor,
                                                 {{"tensor_in_block", b}, {"tensor_block", layout.tensor / b}});
            candidates.push_back(shift(blocks, "tensor_in_block", 1));
        }
    }
    std::vector<RankGrid::Partition> families;
    for (const GroupFamily& f : group_families(layout, false)) families.push_back(f.grid.partition(f.varying));
    std::vector<sim::RankMap> gens;
    for (sim::RankMap& g : candidates)
        if (std::all_of(families.begin(), families.end(), [&](const auto& f) { return maps_onto_itself(g, f); }))
            gens.push_back(std::move(g));
    return gens;
}

}  // namespace cuboid
