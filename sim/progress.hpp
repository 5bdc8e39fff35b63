// How far a simulation has got, for a caller that shows it to a person: a long run (a whole
// iteration of 100,000 GPUs takes tens of seconds) should say that it is working and how much is
// left. Reading it changes nothing that is simulated.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/units.hpp"

namespace cuboid::sim {

struct SimProgress {
    // Ops of the simulated ranks that have finished, of all of theirs (a folded run counts the ranks
    // it simulates). A person's measure of how far the run is, not of the time left: an op may be
    // part of a merged event or cost a re-share of a whole network.
    std::uint64_t ops_done = 0;
    std::uint64_t ops_total = 0;
    Time now{0};              // simulated time reached
    std::uint64_t events = 0;  // events taken so far

    double fraction() const {
        return ops_total == 0 ? 1.0 : static_cast<double>(ops_done) / static_cast<double>(ops_total);
    }
};

// Called on the simulating thread every few thousand events, and once at the end (ops_done ==
// ops_total). It should return quickly: it runs inside the event loop. (To stop a run early, use
// SimOptions::cancel.)
using ProgressCallback = std::function<void(const SimProgress&)>;

}  // namespace cuboid::sim
