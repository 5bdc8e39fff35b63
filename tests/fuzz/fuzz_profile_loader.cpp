// The hardware profile loader (docs/hardware_profile.md) on arbitrary bytes, then the lookups a
// run makes in a loaded profile. Bad input must come back as InputError (exit 2).
#include <cstdint>

#include "hardware_models/errors.hpp"
#include "hardware_models/profile.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto profile = cuboid::hw::HardwareProfile::parse(cuboid::fuzz::as_text(data, size), "fuzz-profile.yaml");
        for (const auto kind : {cuboid::sim::OpKind::AllReduce, cuboid::sim::OpKind::AllGather,
                                cuboid::sim::OpKind::ReduceScatter, cuboid::sim::OpKind::Send})
            for (const int ranks : {2, 8, 16})
                for (const int nodes : {1, 2}) (void)profile.collective(kind, ranks, nodes, "");
    } catch (const cuboid::InputError&) {
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_profile_loader", e);
    }
    return 0;
}
