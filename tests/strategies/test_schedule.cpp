// Per-stage compute orders of the pipeline schedules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "strategies/schedule.hpp"

using namespace cuboid;

namespace {

std::string listing(const std::vector<PipelineStep>& steps) { return step_words(steps); }

// Largest number of micro-batches forwarded but not yet back-propagated.
int peak_in_flight(const std::vector<PipelineStep>& steps) {
    int now = 0, peak = 0;
    for (const auto& s : steps)
        if (s.pass != Pass::Recompute) peak = std::max(peak, now += s.is_forward() ? 1 : -1);
    return peak;
}

}  // namespace

TEST_CASE("1F1B order for p = 4, m = 8 matches the baseline listing of seed_algorithms §1.1") {
    const std::vector<std::string> expected = {
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
    };
    for (int s = 0; s < 4; ++s) CHECK(listing(stage_schedule(Schedule::OneFOneB, 4, 8, 1, s)) == expected[s]);
}

TEST_CASE("peak in-flight micro-batches: min(p - s, m) for 1F1B, m for GPipe") {
    for (int p : {1, 2, 4, 8})
        for (int m : {1, 3, 8, 16})
            for (int s = 0; s < p; ++s) {
                INFO("p " << p << " m " << m << " s " << s);
                CHECK(peak_in_flight(stage_schedule(Schedule::OneFOneB, p, m, 1, s)) == std::min(p - s, m));
                CHECK(peak_in_flight(stage_schedule(Schedule::GPipe, p, m, 1, s)) == m);
            }
}

TEST_CASE("interleaved: every (micro-batch, chunk) runs forward once, then backward once") {
    for (int p : {2, 4})
        for (int v : {2, 3})
            for (int m : {p, 2 * p, 4 * p})
                for (int s = 0; s < p; ++s) {
                    INFO("p " << p << " v " << v << " m " << m << " s " << s);
                    const auto steps = stage_schedule(Schedule::Interleaved, p, m, v, s);
                    CHECK(steps.size() == static_cast<std::size_t>(2 * m * v));
                    std::map<std::pair<int, int>, int> state;  // 0 none, 1 forwarded, 2 done
                    for (const auto& st : steps) {
                        int& x = state[{st.micro, st.chunk}];
                        CHECK(x == (st.is_forward() ? 0 : 1));
                        x = st.is_forward() ? 1 : 2;
                        // Forward through chunks in order: chunk c of a micro-batch after chunk c-1.
                        if (st.is_forward() && st.chunk > 0) CHECK(state[{st.micro, st.chunk - 1}] >= 1);
                    }
                    CHECK(state.size() == static_cast<std::size_t>(m * v));
                }
}

TEST_CASE("interleaved order of Megatron for p = 2, v = 2, m = 4") {
    // Forward k: chunk (k/2)%2, micro (k/4)*2 + k%2 -> (0,0) (1,0) (0,1) (1,1) (2,0) (3,0) (2,1) (3,1);
    // stage 0 warm-up min(8, 2*(2-0-1) + (2-1)*2) = 4, stage 1: min(8, 0 + 2) = 2.
    const auto s0 = stage_schedule(Schedule::Interleaved, 2, 4, 2, 0);
    const auto s1 = stage_schedule(Schedule::Interleaved, 2, 4, 2, 1);
    const auto words = [](const std::vector<PipelineStep>& st) { return step_words(st, true); };
    CHECK(words(s0) == "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
    CHECK(words(s1) == "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
}
