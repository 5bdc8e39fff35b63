// `cuboid-validate --measured FILE`'s reader on arbitrary bytes as a measured-figures JSON
// document (validate/report/figures.hpp; format in docs/validation.md). Bad input must come back
// as InputError (exit 2); figures that are accepted must write back out and read back the same.
#include <cstdint>
#include <stdexcept>

#include "hardware_models/errors.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "validate/report/figures.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cuboid::validate;
    try {
        const Figures f = figures_from_text(cuboid::fuzz::as_text(data, size), "fuzz.json");
        if (f.gpus < 1 || !(f.iteration_time_s > 0.0))
            cuboid::fuzz::internal_error("fuzz_measured_figures", std::logic_error("accepted figures out of range"));
        // What was accepted serializes (the comparison's JSON output) and reads back the same.
        const Figures back = figures_from_text(to_json(f).dump(), "back.json");
        if (back.gpus != f.gpus || back.iteration_time_s != f.iteration_time_s || back.ops.size() != f.ops.size() ||
            back.device != f.device || back.notes != f.notes)
            cuboid::fuzz::internal_error("fuzz_measured_figures", std::logic_error("figures changed on a round trip"));
    } catch (const cuboid::InputError&) {
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_measured_figures", e);
    }
    return 0;
}
