#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "hardware_models/vertex_levels.hpp"

using cuboid::hw::VertexLevels;

// The route search reads a level for any vertex of the graph: the table must answer as the dense
// array it replaces (-1 for a vertex never labelled, the last level set otherwise), through its
// growth from the dozen vertices of a search inside a node to the thousands of one across a network.
TEST_CASE("vertex levels answer as a dense array of the whole graph", "[topology]") {
    constexpr std::size_t kVertices = 50000;
    std::mt19937_64 random(11);
    for (const std::size_t labelled : {0u, 1u, 12u, 100u, 5000u}) {
        VertexLevels table;
        std::vector<std::int8_t> dense(kVertices, -1);
        for (std::size_t k = 0; k < labelled; ++k) {
            const std::size_t v = random() % kVertices;
            const auto level = static_cast<std::int8_t>(random() % 12);
            table.set(v, level);
            dense[v] = level;
        }
        std::size_t mismatches = 0;
        for (std::size_t v = 0; v < kVertices; ++v) mismatches += table(v) != dense[v];
        CHECK(mismatches == 0);
    }
}

TEST_CASE("vertex levels keep the level of a vertex set again", "[topology]") {
    VertexLevels table;
    table.set(7, 3);
    table.set(7, 1);
    CHECK(table(7) == 1);
    CHECK(table(8) == -1);
    CHECK(table(0) == -1);  // vertex 0 is a vertex like any other, not an empty slot
    table.set(0, 0);
    CHECK(table(0) == 0);
}
