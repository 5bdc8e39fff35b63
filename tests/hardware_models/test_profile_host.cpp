// The `host:` section of a hardware profile (profile_host.hpp): parsing, strictness, and the
// price of a HostDispatch op in the compute model.
#include <catch2/catch.hpp>

#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/profile.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

HardwareProfile with_host(const std::string& host_section) {
    return HardwareProfile::parse("format: cuboid-hardware-profile/1\nmetadata: {gpu: a100-sxm-80gb}\n" + host_section,
                                  "host.yaml");
}

sim::Op dispatch(sim::OpCategory category) {
    sim::Op op;
    op.kind = sim::OpKind::HostDispatch;
    op.category = category;
    op.stream = sim::StreamId{5};
    return op;
}

}  // namespace

TEST_CASE("profile host: dispatch times and sync points", "[profile][host]") {
    const HardwareProfile p = with_host("host:\n  dispatch_us: 70\n  comm_dispatch_us: 25\n  sync: [optimizer, pipeline]\n");
    REQUIRE(p.host);
    CHECK(p.host->compute == microseconds(70));
    CHECK(p.host->communication == microseconds(25));
    CHECK(p.host->sync_optimizer);
    CHECK(p.host->sync_pipeline);

    // Without comm_dispatch_us every op costs dispatch_us; without sync the host never waits.
    const HardwareProfile q = with_host("host:\n  dispatch_us: 40\n");
    CHECK(q.host->communication == microseconds(40));
    CHECK_FALSE(q.host->sync_optimizer);
    CHECK_FALSE(q.host->sync_pipeline);

    // No section: no host model at all (the program is not transformed).
    CHECK_FALSE(with_host("").host);
}

TEST_CASE("profile host: a HostDispatch op costs the dispatch time of what it issues", "[profile][host]") {
    const HardwareProfile p = with_host("host:\n  dispatch_us: 70\n  comm_dispatch_us: 25\n");
    const Catalog catalog = Catalog::load_builtin();
    const GpuSpec& gpu = catalog.gpu("a100-sxm-80gb");
    const ComputeModel model(gpu, &p);
    // Pure host time: no kernel launch, no roofline (the op moves no bytes and does no FLOPs).
    CHECK(model.duration(dispatch(sim::OpCategory::Compute)) == microseconds(70));
    CHECK(model.duration(dispatch(sim::OpCategory::Recompute)) == microseconds(70));
    CHECK(model.duration(dispatch(sim::comm_category(0))) == microseconds(25));
    CHECK(model.duration(dispatch(sim::comm_category(1))) == microseconds(25));
    CHECK(model.duration(dispatch(sim::comm_category(2))) == microseconds(25));
    // Without a host section (or without a profile) dispatch is free.
    CHECK(ComputeModel(gpu, nullptr).duration(dispatch(sim::OpCategory::Compute)) == Time(0));
}

TEST_CASE("profile host: unknown keys and values are errors with file and line", "[profile][host]") {
    // Line 5 of the document: the two header lines, "host:", dispatch_us, then the misspelt key.
    try {
        with_host("host:\n  dispatch_us: 70\n  dispatch_usec: 20\n");
        FAIL("an unknown key must be rejected");
    } catch (const InputError& e) {
        CHECK(e.where().file == "host.yaml");
        CHECK(e.where().line == 5);
        CHECK(std::string(e.what()).find("dispatch_usec") != std::string::npos);
    }
    CHECK_THROWS_AS(with_host("host:\n  dispatch_us: 70\n  sync: [backward]\n"), InputError);
    CHECK_THROWS_AS(with_host("host:\n  dispatch_us: -1\n"), InputError);
    CHECK_THROWS_AS(with_host("host:\n  comm_dispatch_us: 20\n"), InputError);  // dispatch_us is required
    CHECK_THROWS_AS(with_host("host: 70\n"), InputError);
}
