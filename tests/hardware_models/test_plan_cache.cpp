#include <catch2/catch.hpp>

#include <thread>

#include "hardware_models/collectives.hpp"
#include "hw_test_util.hpp"

using namespace cuboid;
using namespace cuboid::hw;
using namespace cuboid::hw::test;
using sim::OpKind;

namespace {

bool same(const sim::TransferPlan& a, const sim::TransferPlan& b) {
    if (a.phases.size() != b.phases.size()) return false;
    for (std::size_t p = 0; p < a.phases.size(); ++p) {
        const auto& x = a.phases[p];
        const auto& y = b.phases[p];
        if (x.latency != y.latency || x.flows.size() != y.flows.size()) return false;
        for (std::size_t f = 0; f < x.flows.size(); ++f) {
            if (x.flows[f].bytes != y.flows[f].bytes || x.flows[f].links.size() != y.flows[f].links.size())
                return false;
            for (std::size_t l = 0; l < x.flows[f].links.size(); ++l) {
                if (x.flows[f].links[l].link != y.flows[f].links[l].link ||
                    x.flows[f].links[l].weight != y.flows[f].links[l].weight)
                    return false;
            }
        }
    }
    return true;
}

}  // namespace

TEST_CASE("plan cache: a remembered plan is the plan the model builds, keyed on every input", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(4), Catalog::load_builtin());
    const CollectiveModel& model = hw->collectives();
    const Bytes s = gibibytes(1.0 / 16);
    const std::vector<std::uint32_t> ring{0, 8, 16, 24};
    const std::vector<std::uint32_t> other_order{0, 16, 8, 24};
    const auto first = model.shared_plan(OpKind::AllReduce, s, ring, 0);
    // Asked again: the very plan remembered, equal to a fresh build.
    CHECK(model.shared_plan(OpKind::AllReduce, s, ring, 0) == first);
    CHECK(same(*first, model.plan(OpKind::AllReduce, s, ring, 0).plan));
    // Other bytes, ring order or source are other keys: each gets its own build. A send from 0
    // to 8 and one from 8 to 0 cross opposite directions of the links, so their plans differ.
    CHECK(same(*model.shared_plan(OpKind::AllReduce, s * 2.0, ring, 0), model.plan(OpKind::AllReduce, s * 2.0, ring, 0).plan));
    CHECK(same(*model.shared_plan(OpKind::AllReduce, s, other_order, 0),
               model.plan(OpKind::AllReduce, s, other_order, 0).plan));
    const std::vector<std::uint32_t> pair{0, 8};
    const auto forward = model.shared_plan(OpKind::Send, s, pair, 0);
    const auto backward = model.shared_plan(OpKind::Send, s, pair, 8);
    CHECK(same(*forward, model.plan(OpKind::Send, s, pair, 0).plan));
    CHECK(same(*backward, model.plan(OpKind::Send, s, pair, 8).plan));
    CHECK_FALSE(same(*forward, *backward));
}

TEST_CASE("plan cache: planners on several threads share plans equal to fresh builds", "[collectives]") {
    // Four threads ask for the same collectives in different orders through one model; every
    // plan they get must equal one built alone. A cache keyed wrongly or unsafe under threads
    // shows as a mismatch (or a crash).
    const auto hw = Hardware::build(a100_cluster(4), Catalog::load_builtin());
    const CollectiveModel& model = hw->collectives();
    std::vector<std::vector<std::uint32_t>> groups;
    for (std::uint32_t local = 0; local < 8; ++local) groups.push_back({local, 8 + local, 16 + local, 24 + local});
    std::vector<sim::TransferPlan> expected;
    for (const auto& g : groups) expected.push_back(model.plan(OpKind::AllReduce, gibibytes(1.0 / 64), g, 0).plan);
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t i = 0; i < groups.size(); ++i) {
                const std::size_t k = (i + static_cast<std::size_t>(t) * 3) % groups.size();
                if (!same(*model.shared_plan(OpKind::AllReduce, gibibytes(1.0 / 64), groups[k], 0), expected[k]))
                    ++mismatches[static_cast<std::size_t>(t)];
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(mismatches == std::vector<int>(4, 0));
}
