// `cuboid run`'s progress line (strategies/cli/run_progress.hpp): its text, and that a short run
// or a run nobody watches writes nothing.
#include <catch2/catch.hpp>

#include <sstream>

#include "strategies/cli/run_progress.hpp"

using namespace cuboid;
using namespace cuboid::cli;

TEST_CASE("the run's progress line says how much is simulated, of what, and for how long", "[cli][progress]") {
    sim::SimProgress p;
    p.ops_done = 1'234'567;
    p.ops_total = 2'800'000;
    p.now = Time(4'910'000'000'000);  // 4.91 s
    CHECK(run_progress_text(p, 3.2) ==
          "run: 44 % of the ops simulated (1.2 M of 2.8 M), 4.91 s of the iteration, 3 s elapsed");
    p.ops_done = 9'000;
    p.ops_total = 64'000;
    CHECK(run_progress_text(p, 12.0) ==
          "run: 14 % of the ops simulated (9000 of 64 k), 4.91 s of the iteration, 12 s elapsed");
    CHECK(run_stage_text("preparing the simulation", 1.6) == "run: preparing the simulation, 2 s elapsed");
}

TEST_CASE("a run shorter than a second, or unwatched, draws no progress line", "[cli][progress]") {
    for (const bool enabled : {true, false}) {
        INFO("enabled " << enabled);
        std::ostringstream err;
        {
            RunProgress progress(err, enabled);
            CHECK(progress.drawing() == enabled);
            sim::SimProgress p;
            p.ops_done = p.ops_total = 10;
            progress.simulated(p);
            progress.finish();
            CHECK_FALSE(progress.drawing());
        }
        CHECK(err.str().empty());
    }
}
