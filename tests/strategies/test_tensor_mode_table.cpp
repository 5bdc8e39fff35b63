// The tensor modes' table (strategies/tensor_modes/tensor_mode_kinds.hpp): one row per mode, found
// by value and word; each mode's mesh spans the tensor group, and its rules refuse the degrees
// its mesh cannot take.
#include <catch2/catch.hpp>

#include <array>
#include <set>
#include <string>
#include <tuple>

#include "strategies/names.hpp"
#include "strategies/tensor_modes/mode_validation.hpp"
#include "strategies/tensor_modes/tensor_mode_kinds.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

TEST_CASE("every tensor mode has one row, found by its value and by its word", "[tensor][table]") {
    std::set<std::string> words;
    for (const TensorModeKind& k : tensor_mode_kinds()) {
        INFO(k.name);
        CHECK(&tensor_mode_kind(k.value) == &k);
        CHECK(words.insert(k.name).second);
        CHECK(parse_tensor_mode(k.name, {}) == k.value);
        CHECK(to_string(k.value) == k.name);
        CHECK(k.mesh != nullptr);
    }
    REQUIRE(tensor_mode_table().size() == tensor_mode_kinds().size());
    for (std::size_t i = 0; i < tensor_mode_kinds().size(); ++i) {
        CHECK(tensor_mode_table()[i].value == tensor_mode_kinds()[i].value);
        CHECK(std::string(tensor_mode_table()[i].description) == tensor_mode_kinds()[i].description);
    }
}

TEST_CASE("each tensor mode's mesh spans the tensor group; its rules refuse what it cannot split",
          "[tensor][table]") {
    const auto scenario = [](TensorMode mode, int t) {
        Scenario sc = test::tiny_scenario(t, 1, 1, 4);
        sc.model.heads = 8;
        sc.model.hidden = 64;
        sc.model.ffn_hidden = 256;
        sc.training.micro_batch = 4;
        sc.parallel.tensor_mode = mode;
        sc.parallel.sequence_parallel = false;
        sc.parallel.atp_mesh = {2, 2};
        return sc;
    };
    const auto accepted = [](const Scenario& sc) {
        try {
            check_tensor_mode(sc);
        } catch (const InputError&) {
            return false;
        }
        return true;
    };
    for (const auto& [mode, t, mesh] : {std::tuple{TensorMode::OneD, 4, std::array<int, 3>{4, 1, 1}},
                                        std::tuple{TensorMode::TwoD, 4, std::array<int, 3>{2, 2, 1}},
                                        std::tuple{TensorMode::ThreeD, 8, std::array<int, 3>{2, 2, 2}},
                                        std::tuple{TensorMode::Atp, 4, std::array<int, 3>{2, 2, 1}}}) {
        const Scenario sc = scenario(mode, t);
        INFO(to_string(mode));
        REQUIRE(accepted(sc));
        CHECK(tensor_mode_kind(mode).mesh(sc, nullptr).axes == mesh);
        CHECK(check_tensor_mode(sc).axes == mesh);
    }
    CHECK_FALSE(accepted(scenario(TensorMode::TwoD, 8)));    // not a square
    CHECK_FALSE(accepted(scenario(TensorMode::ThreeD, 4)));  // not a cube
    Scenario bad_atp = scenario(TensorMode::Atp, 8);         // a 2 x 2 mesh of 8 devices
    CHECK_FALSE(accepted(bad_atp));
}
