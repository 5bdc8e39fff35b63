// The grid profiles of the host dispatch estimate (validate/published/host_estimate.hpp).
#include <catch2/catch.hpp>

#include "hardware_models/profile.hpp"
#include "validate/published/host_estimate.hpp"

using namespace cuboid;
using namespace cuboid::validate;

TEST_CASE("host estimate: the grid profile replaces the host section and keeps the rest", "[host]") {
    const std::string base =
        "format: cuboid-hardware-profile/1\n"
        "host:\n  dispatch_us: 999\n  sync: [pipeline]\n"
        "collectives:\n  - {kind: all-reduce, ranks: 8, alpha_us: 50, bus_gb_per_s: 200}\n";
    const std::string text = with_host_section(base, 40.0, HostSyncVariant{"optimizer", {"optimizer"}});
    const hw::HardwareProfile p = hw::HardwareProfile::parse(text, "grid.yaml");
    REQUIRE(p.host);
    CHECK(p.host->compute == microseconds(40));  // the old 999 is gone (a second key would not parse)
    CHECK(p.host->sync_optimizer);
    CHECK_FALSE(p.host->sync_pipeline);
    REQUIRE(p.collectives.size() == 1);  // the section after the old host block survives
    CHECK(p.collectives[0].ranks == 8);

    const hw::HardwareProfile none = hw::HardwareProfile::parse(
        with_host_section(base, 0.0, HostSyncVariant{"none", {}}), "grid.yaml");
    CHECK(none.host->compute == Time(0));
    CHECK_FALSE(none.host->sync_optimizer);
}
