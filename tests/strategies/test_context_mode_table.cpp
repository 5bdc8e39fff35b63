// The context modes' table (strategies/context_attention.hpp): one row per mode, found by its value
// and its word, its rules checked at parallel.context_mode, and the names.hpp table the same rows.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "strategies/context_attention.hpp"
#include "strategies/names.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

TEST_CASE("every context mode has one row, found by its value and by its word", "[context][table]") {
    std::set<std::string> words;
    for (const ContextModeKind& k : context_mode_kinds()) {
        INFO(k.name);
        CHECK(&context_mode_kind(k.value) == &k);
        CHECK(words.insert(k.name).second);
        CHECK(parse_context_mode(k.name, {}) == k.value);
        CHECK(to_string(k.value) == k.name);
        CHECK(k.forward != nullptr);
        CHECK(k.backward != nullptr);
        CHECK(k.ops_per_context_rank >= 0.0);
    }
    REQUIRE(context_mode_table().size() == context_mode_kinds().size());
    for (std::size_t i = 0; i < context_mode_kinds().size(); ++i) {
        CHECK(context_mode_table()[i].value == context_mode_kinds()[i].value);
        CHECK(std::string(context_mode_table()[i].description) == context_mode_kinds()[i].description);
    }
}

TEST_CASE("a context mode's own rules: all-to-all needs whole heads per context rank", "[context][table]") {
    Scenario sc = test::tiny_scenario(2, 1, 4, 4);
    sc.model.heads = 8;  // tensor 2: 4 heads (and 4 key/value heads) per tensor rank
    sc.parallel.context = 4;
    const auto refuses = [&](ContextMode m) {
        sc.parallel.context_mode = m;
        const auto check = context_mode_kind(m).check;
        if (check == nullptr) return false;
        try {
            check(PlanChecker(sc), sc);
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).find("parallel.context_mode") != std::string::npos);
            return true;
        }
        return false;
    };
    CHECK_FALSE(refuses(ContextMode::AllToAll));  // 4 heads over 4 context ranks
    sc.parallel.context = 8;
    CHECK(refuses(ContextMode::AllToAll));  // 4 heads over 8
    CHECK_FALSE(refuses(ContextMode::Ring));
    CHECK_FALSE(refuses(ContextMode::AllGather));
}
