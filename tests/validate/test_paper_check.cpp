// The paper checks: every listed setup file exists and loads, the verdicts follow the band and
// direction rules, a run that cannot happen becomes "not available: <why>", and a direction-only
// Merak row runs end to end.
#include <catch2/catch.hpp>

#include <filesystem>

#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "validate/papers/paper_checks.hpp"

using namespace cuboid;
using namespace cuboid::validate;

namespace {

PaperResult result(double band_lo, double band_hi, std::optional<double> base, std::optional<double> strategy) {
    PaperCheck c;
    c.band_lo = band_lo;
    c.band_hi = band_hi;
    return PaperResult{c, "setup", base, strategy, "the reason", {}};
}

}  // namespace

TEST_CASE("paper checks: every setup file exists and loads") {
    const auto names = cli::builtin_name_resolvers();
    const auto checks = paper_checks("scenarios/papers", "");
    // merak: 4 models x (all + 3 techniques alone); tensor3d: 3 points vs 1d + the 64-GPU vs 2d;
    // atp: 3 interconnects.
    CHECK(checks.size() == 4 * 4 + 4 + 3);
    for (const PaperCheck& c : checks) {
        INFO(c.scenario);
        REQUIRE(std::filesystem::exists(c.scenario));
        CHECK_NOTHROW(cli::load_scenario_file(c.scenario, names));
    }
    CHECK(paper_checks("scenarios/papers", "atp").size() == 3);
}

TEST_CASE("paper checks: verdicts") {
    // speed-up = baseline / strategy: 2.0 / 1.0 = 2x, 1.0 / 2.0 = 0.5x, 1.5 / 1.0 = 1.5x.
    CHECK(result(1.3, 1.7, 1.5, 1.0).verdict() == "in band");
    CHECK(result(1.3, 1.7, 2.0, 1.0).verdict() == "above band");
    CHECK(result(1.3, 1.7, 1.2, 1.0).verdict() == "below band (faster)");
    CHECK(result(1.3, 1.7, 1.0, 2.0).verdict() == "below band (not faster)");
    CHECK(result(0, 0, 1.0, 2.0).verdict() == "not faster (paper: faster)");
    CHECK(result(0, 0, 2.0, 1.0).verdict() == "faster (as the paper)");
    const PaperResult failed = result(1.3, 1.7, 1.0, std::nullopt);
    CHECK(!failed.speedup());
    CHECK(failed.verdict() == "not available: the reason");
    CHECK(*result(0, 0, 3.0, 2.0).speedup() == Approx(1.5));
}

TEST_CASE("paper checks: a bad override is reported, not thrown") {
    PaperCheck c = paper_checks("scenarios/papers", "merak").front();
    c.strategy_sets = {"parallel.no_such_key=1"};
    const PaperResult r = run_paper_check(c, cli::builtin_name_resolvers());
    CHECK(r.baseline_s);
    CHECK(!r.strategy_s);
    CHECK(r.verdict().rfind("not available: ", 0) == 0);
    CHECK(r.failure.find("no_such_key") != std::string::npos);
}
