// The descriptor tables of the pluggable kinds (strategies/names.hpp): every value of each enum
// appears once, its word parses back to it, and an unknown word names the allowed ones.
#include <catch2/catch.hpp>

#include <set>

#include "strategies/names.hpp"

using namespace cuboid;

namespace {

// Each row's word parses to the row's value and prints as the word; no word or value twice; the
// table holds `count` values.
template <class E, class Parse, class Print>
void check_table(std::span<const Descriptor<E>> table, std::size_t count, Parse parse, Print print) {
    std::set<std::string> words;
    std::set<int> values;
    for (const auto& d : table) {
        INFO(d.name);
        CHECK(words.insert(d.name).second);
        CHECK(values.insert(static_cast<int>(d.value)).second);
        CHECK(parse(d.name, InputLocation{}) == d.value);
        CHECK(print(d.value) == d.name);
        CHECK(std::string(d.description).size() > 10);
    }
    CHECK(table.size() == count);
}

}  // namespace

TEST_CASE("descriptor tables: every value once, its word parses back and prints") {
    check_table(schedule_table(), 6, parse_schedule, [](Schedule s) { return to_string(s); });
    check_table(recompute_table(), 4, parse_recompute, [](Recompute r) { return to_string(r); });
    check_table(tensor_mode_table(), 4, parse_tensor_mode, [](TensorMode m) { return to_string(m); });
    check_table(context_mode_table(), 3, parse_context_mode, [](ContextMode m) { return to_string(m); });
    check_table(fp8_recipe_table(), 3, parse_fp8_recipe, fp8_recipe_name);
    check_table(precision_table(), 5, parse_precision, precision_name);
    for (const auto& d : atp_order_table()) CHECK(parse_atp_order(d.name, InputLocation{}) == d.value);
}

TEST_CASE("descriptor tables: an unknown word is an input error naming the allowed words") {
    try {
        parse_schedule("zb-h2", InputLocation{"s.yaml", 7, "parallel.schedule"});
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(e.where().line == 7);
        CHECK_THAT(e.what(), Catch::Contains("allowed: gpipe, 1f1b, interleaved, shifted-critical-path, zb-h1, zb-v"));
    }
}
