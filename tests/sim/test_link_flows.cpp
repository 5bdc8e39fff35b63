#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "sim/link_flows.hpp"

using cuboid::sim::LinkFlows;
using cuboid::sim::OnLink;

namespace {

std::vector<std::uint32_t> ids(const LinkFlows& list) {
    std::vector<std::uint32_t> out;
    for (const OnLink& o : list) out.push_back(o.flow);
    return out;
}

// The flow network's removal: the last entry moves into the removed one's place.
template <class List>
void remove_flow(List& list, std::uint32_t flow) {
    auto it = std::find_if(list.begin(), list.end(), [flow](const OnLink& o) { return o.flow == flow; });
    REQUIRE(it != list.end());
    *it = list.back();
    list.pop_back();
}

}  // namespace

// The network's results depend on the order of a link's flows (it orders the component search and
// so water-filling's sums), so the inline list must keep exactly std::vector's order, across the
// switch from its two inline entries to the heap and back down in size.
TEST_CASE("a link's flow list keeps std::vector's order under attach and swap-and-pop removal", "[sim][flow]") {
    std::mt19937 random(7);
    LinkFlows list;
    std::vector<OnLink> model;
    std::uint32_t next = 0;
    std::size_t largest = 0;
    for (int step = 0; step < 4000; ++step) {
        const bool add = model.empty() || (random() % 100) < (model.size() < 6 ? 60u : 40u);
        if (add) {
            const OnLink entry{next, 0.5 + next};
            ++next;
            list.push_back(entry);
            model.push_back(entry);
        } else {
            const std::uint32_t flow = model[random() % model.size()].flow;
            remove_flow(list, flow);
            remove_flow(model, flow);
        }
        largest = std::max(largest, model.size());
        REQUIRE(list.size() == model.size());
        REQUIRE(list.empty() == model.empty());
        std::vector<std::uint32_t> expected;
        for (const OnLink& o : model) expected.push_back(o.flow);
        REQUIRE(ids(list) == expected);
        for (std::size_t i = 0; i < model.size(); ++i) REQUIRE(list.begin()[i].weight == model[i].weight);
    }
    CHECK(largest > 4);  // the walk went well past the inline entries
}

TEST_CASE("moving a link's flow list moves its entries, inline or on the heap", "[sim][flow]") {
    for (std::uint32_t n : {0u, 1u, 2u, 3u, 9u}) {
        LinkFlows a;
        for (std::uint32_t i = 0; i < n; ++i) a.push_back({i, 1.0 * i});
        const std::vector<std::uint32_t> before = ids(a);
        LinkFlows b(std::move(a));
        CHECK(ids(b) == before);
        CHECK(a.empty());
        a.push_back({42, 1.0});  // the moved-from list is usable again
        CHECK(ids(a) == std::vector<std::uint32_t>{42});
        LinkFlows c;
        c.push_back({7, 2.0});
        c = std::move(b);
        CHECK(ids(c) == before);
    }
}
