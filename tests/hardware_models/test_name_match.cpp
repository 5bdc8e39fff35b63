// "Did you mean": the one matcher behind every refused name (GPUs and their aliases, node and
// network kinds, catalog sections; the scenario keys and model presets use it too).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/name_match.hpp"

using namespace cuboid;

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    FAIL("expected an InputError");
    return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("closest_name: same name ignoring case and punctuation, then a prefix, then a typo", "[name_match]") {
    const std::vector<std::string> names{"h100-sxm-80gb", "h100", "h200-sxm-141gb", "pipeline", "nvswitch"};
    CHECK(closest_name("H100", names) == std::optional<std::string>("h100"));
    CHECK(closest_name("H-100", names) == std::optional<std::string>("h100"));
    CHECK(closest_name("NVSwitch", names) == std::optional<std::string>("nvswitch"));
    CHECK(closest_name("h100-sxm", names) == std::optional<std::string>("h100-sxm-80gb"));
    CHECK(closest_name("H200_SXM", names) == std::optional<std::string>("h200-sxm-141gb"));
    CHECK(closest_name("pipline", names) == std::optional<std::string>("pipeline"));
    CHECK_FALSE(closest_name("zzzzzzzz", names));
    CHECK_FALSE(closest_name("", names));
    CHECK(did_you_mean("pipline", names) == " (did you mean 'pipeline'?)");
    CHECK(did_you_mean("zzzzzzzz", names).empty());
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("an unknown GPU names the catalog GPU or alias it most likely meant", "[name_match][catalog]") {
    const hw::Catalog c = hw::Catalog::load_builtin();
    const std::string upper = error_of([&] { c.gpu("H100"); });
    CHECK(contains(upper, "unknown GPU 'H100'"));
    CHECK(contains(upper, "(did you mean 'h100', the alias of h100-sxm-80gb?)"));
    CHECK(contains(error_of([&] { c.gpu("h200-sxm"); }), "(did you mean 'h200-sxm-141gb'?)"));
    CHECK(contains(error_of([&] { c.gpu("MI300"); }), "the alias of mi300x-192gb"));
    CHECK_FALSE(contains(error_of([&] { c.gpu("tpu-v5p"); }), "did you mean"));
}

TEST_CASE("unknown node and network kinds and catalog sections get a suggestion", "[name_match][catalog]") {
    const InputLocation at{"s.yaml", 4, "cluster.intra_node"};
    CHECK(contains(error_of([&] { hw::parse_intra_node_kind("NVSwitch", at); }), "(did you mean 'nvswitch'?)"));
    CHECK(contains(error_of([&] { hw::parse_inter_node_kind("infiniban", at); }), "(did you mean 'infiniband'?)"));
    CHECK(contains(error_of([&] { hw::parse_network_topology("fattree", at); }), "(did you mean 'fat-tree'?)"));
    CHECK(contains(error_of([&] { hw::parse_catalog_section("GPUs", at); }), "(did you mean 'gpus'?)"));
}
