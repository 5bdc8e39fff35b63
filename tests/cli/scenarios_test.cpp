// Every scenario shipped in scenarios/ loads with the real catalogs, is complete, and has a
// plan the strategies accept.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/layout.hpp"

using namespace cuboid;

TEST_CASE("every scenario in scenarios/ loads and validates", "[cli][scenarios]") {
    const auto names = cli::builtin_name_resolvers();
    int count = 0;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::filesystem::path(CUBOID_SOURCE_DIR) / "scenarios")) {
        if (entry.path().extension() != ".yaml") continue;
        // Studies are not scenarios: `cuboid whatif` reads them (tests/cli/whatif_study_test.cpp).
        if (entry.path().parent_path().filename() == "studies") continue;
        INFO(entry.path().string());
        // Search examples carry a `search:` section that only `cuboid search` reads.
        const bool search = entry.path().parent_path().filename() == "search";
        const cli::SearchScenario with_space =
            search ? cli::load_search_scenario(entry.path().string(), names) : cli::SearchScenario{};
        if (search) CHECK_NOTHROW(cli::search_space_of(with_space));
        const Scenario s = search ? with_space.scenario : cli::load_scenario_file(entry.path().string(), names);
        CHECK_NOTHROW(cli::check_complete(s));
        CHECK_NOTHROW(validate_plan(s));
        ++count;
    }
    // default.yaml, the contract's example and the ten rows of Megatron SC'21 Table 1.
    CHECK(count >= 12);
}

TEST_CASE("the Megatron SC'21 scenarios use the interleaved schedule exactly where the script gives "
          "layers per virtual stage",
          "[cli][scenarios]") {
    const auto names = cli::builtin_name_resolvers();
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(CUBOID_SOURCE_DIR) /
                                                                 "scenarios" / "megatron_sc21")) {
        INFO(entry.path().string());
        const Scenario s = cli::load_scenario_file(entry.path().string(), names);
        // virtual_stages = layers / (pipeline * layers_per_virtual_stage) is a whole number of
        // chunks, each the same number of layers.
        CHECK(s.model.layers % (s.parallel.pipeline * s.parallel.virtual_stages) == 0);
        CHECK((s.parallel.schedule == Schedule::Interleaved) == (s.parallel.virtual_stages > 1));
        // Selene: tensor x pipeline x data covers every GPU of the 8-GPU nodes.
        CHECK(s.parallel.tensor * s.parallel.pipeline * s.parallel.data == s.cluster.nodes * 8);
        CHECK(s.parallel.recompute == Recompute::Full);
    }
}

TEST_CASE("docs/scenario.md documents every scenario key", "[cli][docs]") {
    std::ifstream in(std::filesystem::path(CUBOID_SOURCE_DIR) / "docs" / "scenario.md");
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE_FALSE(doc.empty());
    for (const auto& key : cli::scenario_keys()) {
        INFO(key.key);
        std::string quoted = "`";
        quoted.append(key.key).append("`");
        CHECK(doc.find(quoted) != std::string::npos);
    }
}

TEST_CASE("unknown presets and GPUs of the real catalogs are located at their key", "[cli][scenarios]") {
    const auto names = cli::builtin_name_resolvers();
    try {
        cli::load_scenario_text("name: x\nmodel:\n  preset: gpt-40b\n", "s.yaml", ".", names);
        FAIL("an unknown preset must be an error");
    } catch (const InputError& e) {
        // Line 3 holds the preset; the message lists the known presets.
        CHECK(e.where().file == "s.yaml");
        CHECK(e.where().line == 3);
        CHECK(e.where().key == "model.preset");
        CHECK(std::string(e.what()).find("gpt-39.1b") != std::string::npos);
    }
    try {
        cli::load_scenario_text("cluster:\n  gpu: a100-sxm-81gb\n", "s.yaml", ".", names);
        FAIL("an unknown GPU must be an error");
    } catch (const InputError& e) {
        CHECK(e.where().line == 2);
        CHECK(e.where().key == "cluster.gpu");
        CHECK(std::string(e.what()).find("a100-sxm-80gb") != std::string::npos);
    }
    // An alias resolves to the catalog's name.
    CHECK(cli::load_scenario_text("cluster:\n  gpu: a100\n", "s.yaml", ".", names).cluster.gpu == "a100-sxm-80gb");
}

TEST_CASE("a mistyped GPU or model preset gets a \"did you mean\" at its key", "[cli][scenarios]") {
    const auto names = cli::builtin_name_resolvers();
    const auto error_of = [&](const std::string& text) {
        try {
            cli::load_scenario_text(text, "s.yaml", ".", names);
        } catch (const InputError& e) {
            return e;
        }
        FAIL("expected an InputError");
        throw std::logic_error("unreachable");
    };
    const InputError gpu = error_of("cluster:\n  gpu: H100\n");
    CHECK(gpu.where().line == 2);
    CHECK(gpu.where().key == "cluster.gpu");
    CHECK(std::string(gpu.what()).find("did you mean 'h100', the alias of h100-sxm-80gb?") != std::string::npos);
    const InputError preset = error_of("model:\n  preset: Llama3-8B\n");
    CHECK(preset.where().key == "model.preset");
    CHECK(std::string(preset.what()).find("did you mean 'llama3-8b'?") != std::string::npos);
    const InputError typo = error_of("model:\n  preset: lama2-70b\n");
    CHECK(std::string(typo.what()).find("did you mean 'llama2-70b'?") != std::string::npos);
    const InputError network = error_of("cluster:\n  inter_node:\n    kind: RoCE\n");
    CHECK(network.where().line == 3);
    CHECK(std::string(network.what()).find("did you mean 'roce'?") != std::string::npos);
}
