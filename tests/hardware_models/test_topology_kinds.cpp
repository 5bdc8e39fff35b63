// The topology table (hardware_models/topology_kinds.hpp): one row per topology, found by value and
// word, and each row's NIC placement a one-to-one map of NICs onto leaf ports.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>

#include "hardware_models/catalog.hpp"
#include "hardware_models/topology_kinds.hpp"

using namespace cuboid;
using namespace cuboid::hw;

TEST_CASE("every topology has one row, found by its value and by its word", "[topology][table]") {
    std::set<std::string> words;
    for (const TopologyKind& k : topology_kinds()) {
        INFO(k.name);
        CHECK(&topology_kind(k.value) == &k);
        CHECK(words.insert(k.name).second);
        CHECK(parse_network_topology(k.name, {}) == k.value);
        CHECK(std::string(to_string(k.value)) == k.name);
    }
    CHECK_THROWS_AS(parse_network_topology("torus", {}), InputError);
}

TEST_CASE("each topology puts every NIC on its own port of a leaf", "[topology][table]") {
    for (const TopologyKind& k : topology_kinds())
        for (const int nics_per_node : {1, 4, 8})
            for (const int nodes : {1, 3, 16, 40})
                for (const int down : {4, 8, 32}) {
                    INFO(k.name << " " << nodes << " nodes x " << nics_per_node << " NICs, " << down << " down ports");
                    std::set<std::pair<int, int>> used;
                    for (int nic = 0; nic < nodes * nics_per_node; ++nic) {
                        const int leaf = k.leaf_of_nic(nic, down, nics_per_node);
                        const int port = k.leaf_port_of_nic(nic, down, nics_per_node);
                        CHECK(leaf >= 0);
                        CHECK(port >= 0);
                        if (k.value != NetworkTopology::SingleSwitch) {
                            CHECK(port < down);
                            CHECK(used.insert({leaf, port}).second);
                        }
                    }
                }
}

TEST_CASE("a rail-optimized fabric keeps NIC i of every node on rail i's leaves", "[topology][table]") {
    const TopologyKind& rail = topology_kind(NetworkTopology::RailOptimized);
    const int m = 8, down = 32;
    for (int node = 0; node < 64; ++node)
        for (int i = 0; i < m; ++i) CHECK(rail.leaf_of_nic(node * m + i, down, m) % m == i);
}
