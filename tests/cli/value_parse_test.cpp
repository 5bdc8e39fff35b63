// Text-to-value conversions and the edit-distance suggestion.
#include <catch2/catch.hpp>

#include "strategies/cli/suggest.hpp"
#include "strategies/cli/value_parse.hpp"
#include "tests/cli/loader_fixtures.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

TEST_CASE("numbers accept exponents; integers accept only whole numbers", "[cli][parse]") {
    const InputLocation w{"f", 1, "k"};
    CHECK(parse_number("300e9", w) == 300e9);
    CHECK(parse_number("+1.5", w) == 1.5);
    CHECK(parse_int(" 42 ", w) == 42);
    CHECK(contains(input_error_of([&] { parse_int("8.0", w); }).what(), "expected an integer, got '8.0'"));
    CHECK(contains(input_error_of([&] { parse_int("99999999999", w); }).what(), "out of the range"));
    CHECK(contains(input_error_of([&] { parse_number("inf", w); }).what(), "expected a number"));
    CHECK(contains(input_error_of([&] { parse_number("", w); }).what(), "got nothing"));
    CHECK(parse_bool("Yes", w));
    CHECK_FALSE(parse_bool("off", w));
}

TEST_CASE("edit distance counts single-letter edits", "[cli][parse]") {
    // kitten -> sitting: substitute k->s, e->i, insert g = 3 edits.
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("", "abc") == 3);
    const std::vector<std::string> names{"tensor", "pipeline", "data"};
    CHECK(closest("pipline", names) == std::optional<std::string>("pipeline"));
    CHECK_FALSE(closest("zzzzzzzz", names).has_value());
}
