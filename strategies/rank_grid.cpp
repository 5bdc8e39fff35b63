#include "strategies/rank_grid.hpp"

#include <stdexcept>
#include <string>

namespace cuboid {

RankGrid::RankGrid(std::vector<GridAxis> axes) : axes_(std::move(axes)) {
    for (std::size_t a = 0; a < axes_.size(); ++a) {
        if (axes_[a].size < 1)
            throw std::logic_error("rank grid: axis '" + std::string(axes_[a].name) + "' has size " +
                                   std::to_string(axes_[a].size));
        for (std::size_t b = 0; b < a; ++b)
            if (axes_[b].name == axes_[a].name)
                throw std::logic_error("rank grid: axis '" + std::string(axes_[a].name) + "' named twice");
        strides_.push_back(ranks_);
        ranks_ *= axes_[a].size;
    }
}

std::size_t RankGrid::index(std::string_view name) const {
    for (std::size_t a = 0; a < axes_.size(); ++a)
        if (axes_[a].name == name) return a;
    throw std::logic_error("rank grid: no axis '" + std::string(name) + "'");
}

std::uint32_t RankGrid::rank(std::span<const int> coords) const {
    if (coords.size() != axes_.size()) throw std::logic_error("rank grid: wrong number of coordinates");
    int r = 0;
    for (std::size_t a = 0; a < axes_.size(); ++a) r += coords[a] * strides_[a];
    return static_cast<std::uint32_t>(r);
}

std::uint32_t RankGrid::shifted(std::uint32_t rank, std::size_t axis, int by) const {
    const int n = axes_[axis].size, c = coord(rank, axis);
    const int moved = ((c + by) % n + n) % n;
    return static_cast<std::uint32_t>(static_cast<int>(rank) + (moved - c) * strides_[axis]);
}

RankGrid RankGrid::resplit(std::string_view first, std::string_view last, std::vector<GridAxis> parts) const {
    const std::size_t a = index(first), b = index(last);
    if (b < a) throw std::logic_error("rank grid: resplit of '" + std::string(first) + "'..'" + std::string(last) +
                                      "' out of order");
    int block = 1, split = 1;
    for (std::size_t k = a; k <= b; ++k) block *= axes_[k].size;
    for (const GridAxis& p : parts) split *= p.size;
    if (block != split) throw std::logic_error("rank grid: resplit of '" + std::string(first) + "'..'" +
                                               std::string(last) + "' changes the number of ranks");
    std::vector<GridAxis> out(axes_.begin(), axes_.begin() + static_cast<std::ptrdiff_t>(a));
    out.insert(out.end(), parts.begin(), parts.end());
    out.insert(out.end(), axes_.begin() + static_cast<std::ptrdiff_t>(b + 1), axes_.end());
    return RankGrid(std::move(out));
}

RankGrid::Partition RankGrid::partition(std::span<const std::string_view> varying) const {
    std::vector<std::size_t> along;
    int members = 1;
    for (const std::string_view name : varying) {
        along.push_back(index(name));
        members *= axes_[along.back()].size;
    }
    // Offsets of a group's members from its first rank, the first varying axis fastest.
    std::vector<int> offsets{0};
    for (const std::size_t a : along) {
        const std::size_t n = offsets.size();
        for (int c = 1; c < axes_[a].size; ++c)
            for (std::size_t k = 0; k < n; ++k) offsets.push_back(offsets[k] + c * strides_[a]);
    }
    Partition p;
    p.groups.reserve(static_cast<std::size_t>(ranks_ / members));
    p.group_of.resize(static_cast<std::size_t>(ranks_));
    for (int r = 0; r < ranks_; ++r) {
        bool first = true;
        for (const std::size_t a : along) first = first && coord(static_cast<std::uint32_t>(r), a) == 0;
        if (!first) continue;
        const auto g = static_cast<std::uint32_t>(p.groups.size());
        std::vector<std::uint32_t>& ranks = p.groups.emplace_back();
        ranks.reserve(offsets.size());
        for (const int o : offsets) {
            ranks.push_back(static_cast<std::uint32_t>(r + o));
            p.group_of[static_cast<std::size_t>(r + o)] = g;
        }
    }
    return p;
}

}  // namespace cuboid
