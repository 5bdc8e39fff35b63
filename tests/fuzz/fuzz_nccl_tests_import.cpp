// cuboid-import-nccl-tests on arbitrary bytes as one results file: parse, fit, write the profile,
// and read that profile back. The importer refuses a bad file with an exception whose message it
// prints (exit 2); a profile it writes must load without error, since the simulator reads nothing
// else.
#include <cstdint>

#include "calibrate/fit/nccl_tests.hpp"
#include "calibrate/fit/profile_writer.hpp"
#include "hardware_models/profile.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string written;
    try {
        cuboid::calibrate::NcclTestsHints hints;
        // A CSV names no ranks: the file name gives them, as the importer's docs say.
        const auto run = cuboid::calibrate::parse_nccl_tests(cuboid::fuzz::as_text(data, size), "fuzz_8gpu.txt", hints);
        (void)cuboid::calibrate::bus_bandwidth_table(run);
        const auto fitted = cuboid::calibrate::import_nccl_tests({run}, {{"gpu", "H100-SXM-80GB"}});
        written = cuboid::calibrate::profile_yaml(fitted);
    } catch (const std::exception&) {
        return 0;  // cuboid-import-nccl-tests prints it and exits 2
    }
    try {
        (void)cuboid::hw::HardwareProfile::parse(written, "imported-profile.yaml");
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_nccl_tests_import (the written profile does not load)", e);
    }
    return 0;
}
