// model.hf_config's reader on arbitrary bytes as a Hugging Face config.json: parse, type checks,
// the family's fields, the refusals. Bad input must come back as InputError (exit 2); a config
// that is accepted must give a model the loader's own checks would accept.
#include <cstdint>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "hardware_models/errors.hpp"
#include "strategies/cli/hf_config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const cuboid::ModelSpec m = cuboid::cli::import_hf_config(cuboid::fuzz::as_text(data, size), "fuzz.json");
        if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.vocab < 1 || m.kv_heads < 0 || m.ffn_hidden < 0 ||
            m.seq_len < 0 || !m.imported)
            cuboid::fuzz::internal_error("fuzz_hf_config", std::logic_error("accepted a model out of range"));
        // What reaches the JSON result must serialize (valid UTF-8).
        (void)nlohmann::json{m.imported->architecture, m.imported->model_type, m.imported->notes}.dump();
    } catch (const cuboid::InputError&) {
    } catch (const std::exception& e) {
        cuboid::fuzz::internal_error("fuzz_hf_config", e);
    }
    return 0;
}
