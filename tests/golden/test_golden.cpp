// Golden scenarios: whole runs whose iteration time and determinism fingerprint are stored in
// tests/golden/expected.json. They catch any unintended change of a model or of the event order.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fmt/core.h>
#include <fstream>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/run.hpp"

TEST_CASE("golden scenarios keep their iteration time and fingerprint", "[golden]") {
    std::ifstream in("tests/golden/expected.json");
    REQUIRE(in);
    const nlohmann::json expected = nlohmann::json::parse(in);
    const auto names = cuboid::cli::builtin_name_resolvers();
    for (const auto& [file, want] : expected.items()) {
        if (file.front() == '_') continue;
        SECTION(file) {
            const cuboid::Scenario sc = cuboid::cli::load_scenario_file(file, names);
            const cuboid::RunResult r = cuboid::run_scenario(sc);
            // Stored with 6 decimals (microseconds): equal within half a microsecond.
            CHECK(r.iteration_time_s == Approx(want.at("iteration_time_s").get<double>()).margin(0.5e-6));
            CHECK(fmt::format("0x{:016x}", r.fingerprint) == want.at("fingerprint").get<std::string>());
            // Symmetry folding changes nothing but the events taken.
            cuboid::RunOptions fold;
            fold.fold = true;
            const cuboid::RunResult folded = cuboid::run_scenario(sc, fold);
            CHECK(folded.iteration_time_s == r.iteration_time_s);
            CHECK(folded.fingerprint == r.fingerprint);
            CHECK(folded.sim_events <= r.sim_events);
        }
    }
}
