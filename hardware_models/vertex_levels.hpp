// The levels a breadth-first route search gives the vertices it labels; -1 for every other.
//
// A search inside an NVLink domain labels its source, the domain's switches and its destination: a
// dozen vertices of a graph with one per GPU, NIC and switch of the cluster. An array over the
// whole graph, cleared for every search, cost more than the search: 70,000 bytes for each of the
// 115,000 routes inside nodes that a folded run of 32,768 GPUs asks for (the symmetry proof routes
// every pair it compares), and ten times both at 131,072 GPUs. This open-addressing table is sized
// by what the search labels, and grows (a search across the network labels its switches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cuboid::hw {

class VertexLevels {
public:
    explicit VertexLevels(std::size_t expected = 16) {
        std::size_t slots = 32;
        while (slots < 2 * expected) slots *= 2;
        keys_.assign(slots, kEmpty);
        levels_.assign(slots, -1);
    }

    std::int8_t operator()(std::size_t vertex) const {
        for (std::size_t i = slot_of(vertex, keys_.size());; i = (i + 1) & (keys_.size() - 1)) {
            if (keys_[i] == vertex) return levels_[i];
            if (keys_[i] == kEmpty) return -1;
        }
    }

    void set(std::size_t vertex, std::int8_t level) {
        if (2 * (used_ + 1) > keys_.size()) grow();
        if (place(keys_, levels_, vertex, level)) ++used_;
    }

private:
    static constexpr std::size_t kEmpty = std::numeric_limits<std::size_t>::max();

    static std::size_t slot_of(std::size_t vertex, std::size_t slots) {
        return static_cast<std::size_t>((static_cast<std::uint64_t>(vertex) * 0x9E3779B97F4A7C15ULL) >> 32) &
               (slots - 1);
    }

    // Sets the vertex's level; true when the vertex was not in the table.
    static bool place(std::vector<std::size_t>& keys, std::vector<std::int8_t>& levels, std::size_t vertex,
                      std::int8_t level) {
        for (std::size_t i = slot_of(vertex, keys.size());; i = (i + 1) & (keys.size() - 1)) {
            if (keys[i] == vertex) {
                levels[i] = level;
                return false;
            }
            if (keys[i] == kEmpty) {
                keys[i] = vertex;
                levels[i] = level;
                return true;
            }
        }
    }

    void grow() {
        std::vector<std::size_t> keys(2 * keys_.size(), kEmpty);
        std::vector<std::int8_t> levels(keys.size(), -1);
        for (std::size_t i = 0; i < keys_.size(); ++i) {
            if (keys_[i] != kEmpty) place(keys, levels, keys_[i], levels_[i]);
        }
        keys_ = std::move(keys);
        levels_ = std::move(levels);
    }

    std::vector<std::size_t> keys_;
    std::vector<std::int8_t> levels_;
    std::size_t used_ = 0;
};

}  // namespace cuboid::hw
