// The checks every YAML input format gets on parsing (hardware_models/yaml_text.hpp): UTF-8, a
// closed quote on the last line, no key written twice; each error names file, line and key.
#include <catch2/catch.hpp>

#include "hardware_models/errors.hpp"
#include "hardware_models/profile.hpp"
#include "hardware_models/yaml_text.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

InputError error_of(const std::string& text) {
    try {
        load_yaml_document(text, "f.yaml", "a test file");
    } catch (const InputError& e) {
        return e;
    }
    FAIL("no InputError for: " << text);
    throw;
}

InputError profile_error_of(const std::string& text) {
    try {
        HardwareProfile::parse(text, "p.yaml");
    } catch (const InputError& e) {
        return e;
    }
    FAIL("no InputError for the profile: " << text);
    throw;
}

}  // namespace

TEST_CASE("valid YAML with quotes, escapes and UTF-8 loads", "[yaml]") {
    const YAML::Node n =
        load_yaml_document("a: \"x\\\"y\"\nb: 'it''s'\nc: \"na\xC3\xAFve \xE2\x82\xAC\"\nd: |\n  block\n", "f.yaml", "x");
    CHECK(n["a"].Scalar() == "x\"y");
    CHECK(n["b"].Scalar() == "it's");
    CHECK(n["c"].Scalar() == "na\xC3\xAFve \xE2\x82\xAC");
}

TEST_CASE("invalid UTF-8 is refused with its line", "[yaml]") {
    const InputError e = error_of("a: 1\nname: \"ab\xFF\"\n");
    CHECK(e.where().file == "f.yaml");
    CHECK(e.where().line == 2);
    CHECK(e.where().key == "name");
    CHECK_THAT(e.what(), Catch::Contains("UTF-8") && Catch::Contains("0xFF") && Catch::Contains("column 10"));
    CHECK(error_of("l:\n  - a\n  - {k: \"\xFE\"}\n").where().key == "l[1].k");
    CHECK_THROWS_AS(load_yaml_document("a: \xC0\xAF\n", "f.yaml", "x"), InputError);    // overlong '/'
    CHECK_THROWS_AS(load_yaml_document("a: \xED\xA0\x80\n", "f.yaml", "x"), InputError);  // a surrogate
    CHECK_THROWS_AS(load_yaml_document("a: \xE2\x82\n", "f.yaml", "x"), InputError);      // cut short
    CHECK_THROWS_WITH(check_utf8("x\x80", {"", 0, "name"}), Catch::Contains("'name'") && Catch::Contains("UTF-8"));
    CHECK_NOTHROW(check_utf8("plain \xE2\x82\xAC", {"", 0, "name"}));
}

TEST_CASE("a quote left open on the last line is refused", "[yaml]") {
    for (const std::string text : {"a: 1\nname: \"abc\n", "a: 1\nname: 'abc\n", "a: 1\nname: \"abc\\\"\n"}) {
        const InputError e = error_of(text);
        CHECK(e.where().line == 2);
        CHECK(e.where().key == "name");
        CHECK_THAT(e.what(), Catch::Contains("never closed"));
    }
}

TEST_CASE("a key written twice is refused at its second line, in any map", "[yaml]") {
    const InputError e = error_of("a:\n  b: 1\n  c: 2\n  b: 3\n");
    CHECK(e.where().line == 4);
    CHECK(e.where().key == "a.b");
    CHECK_THAT(e.what(), Catch::Contains("duplicate key (first written at line 2)"));
    CHECK(error_of("l:\n  - {x: 1, x: 2}\n").where().key == "l[0].x");
}

TEST_CASE("more than one document is refused", "[yaml]") {
    CHECK_THAT(error_of("a: 1\n---\nb: 2\n").what(), Catch::Contains("2 YAML documents") && Catch::Contains("a test file is one"));
}

TEST_CASE("a stray comma where a document starts is refused, not parsed forever", "[yaml]") {
    // yaml-cpp 0.7's LoadAll loops on these, allocating without end (found by fuzzing).
    for (const std::string text : {",", ",{", "a: 1\n  , {b: c,", "x: 1\n---\n,\n"}) {
        INFO(text);
        const InputError e = error_of(text);
        CHECK(std::string(e.what()).find("YAML syntax error") != std::string::npos);
    }
    CHECK(error_of("a: 1\n  , {b: c,").where().line == 2);
    // The same text with a byte that is not UTF-8: the UTF-8 error, whose key lookup re-reads it.
    CHECK(std::string(error_of("a: \xFF\n,{").what()).find("UTF-8") != std::string::npos);
}

TEST_CASE("a hardware profile refuses duplicates, map keys and out-of-range latencies", "[yaml][profile]") {
    CHECK(profile_error_of("kernel_launch_us: 3\nkernel_launch_us: 4\n").where().line == 2);
    const InputError key = profile_error_of("metadata:\n  ? {a: 1}\n  : x\n");
    CHECK(key.where().file == "p.yaml");
    CHECK_THAT(key.what(), Catch::Contains("plain name"));
    const InputError gpu = profile_error_of("metadata:\n  gpu: {name: a100}\n");
    CHECK(gpu.where().key == "metadata.gpu");
    CHECK(gpu.where().line == 2);
    for (const std::string v : {"1e300", "-1", ".nan", ".inf"}) {
        const InputError e = profile_error_of("kernel_launch_us: " + v + "\n");
        CHECK(e.where().key == "kernel_launch_us");
        CHECK(e.where().line == 1);
    }
    CHECK(profile_error_of("collectives:\n  - {kind: all-reduce, ranks: 8, alpha_us: 5, bus_gb_per_s: 1e6}\n")
              .where().key == "collectives[0].bus_gb_per_s");
}
