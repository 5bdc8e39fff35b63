// Merak's shifted critical path: per-stage orders, preconditions, the printable schedule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "strategies/layout.hpp"
#include "strategies/schedule.hpp"
#include "strategies/schedule_print.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

std::vector<std::string> scp_listing(int p, int m) {
    std::vector<std::string> out;
    for (int s = 0; s < p; ++s) out.push_back(step_words(scp_stage_schedule(p, m, s)));
    return out;
}

}  // namespace

TEST_CASE("SCP order for p = 4, m = 8 equals Merak's generated listing") {
    // Copied from seed_algorithms §1.1 ("Per-stage compute order produced by Merak's generator for
    // p = 4, m = 8", the authors' full_critical_path_1f1b schedule class, executed).
    const std::vector<std::string> expected = {
        "F0 F1 F2 F3 B0 F4 B1 Fc5 B2 Fc6 B3 Fc7 B4 R5 B5 R6 B6 R7 B7",
        "Fc0 F1 F2 R0 B0 F3 B1 F4 B2 F5 B3 Fc6 B4 Fc7 B5 R6 B6 R7 B7",
        "Fc0 Fc1 F2 R0 B0 R1 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
    };
    CHECK(scp_listing(4, 8) == expected);
}

TEST_CASE("SCP small cases p = 2, m = 4 and p = 3, m = 6 equal seed_algorithms §1.1") {
    // seed_algorithms §1.1, "Small cases (SCP)".
    CHECK(scp_listing(2, 4) == std::vector<std::string>{"Fc0 Fc1 F2 R0 B0 R1 B1 F3 B2 B3",
                                                        "F0 B0 F1 B1 F2 B2 F3 B3"});
    CHECK(scp_listing(3, 6) == std::vector<std::string>{"Fc0 F1 F2 R0 B0 F3 B1 Fc4 B2 Fc5 B3 R4 B4 R5 B5",
                                                        "Fc0 Fc1 F2 R0 B0 R1 B1 F3 B2 F4 B3 F5 B4 B5",
                                                        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5"});
}

TEST_CASE("SCP: each micro-batch once forward and backward, R exactly for the Fc ones, before B") {
    for (int p : {2, 3, 4, 8})
        for (int m = std::max(p, 4); m <= 16; ++m)
            for (int s = 0; s < p; ++s) {
                INFO("p " << p << " m " << m << " s " << s);
                std::map<int, std::string> seen;  // micro -> passes in order
                int recomputes = 0;
                for (const auto& st : scp_stage_schedule(p, m, s)) {
                    static const char* kWord[] = {"F", "C", "R", "B"};
                    seen[st.micro] += kWord[static_cast<int>(st.pass)];
                    recomputes += st.pass == Pass::Recompute;
                }
                CHECK(seen.size() == static_cast<std::size_t>(m));
                for (const auto& [micro, passes] : seen) CHECK((passes == "FB" || passes == "CRB"));
                // R count per stage (seed_algorithms §1.1): last 0, p-2: 2, p-3: 1 + 2, s < p-3: p-s-1.
                const int expected = s == p - 1 ? 0 : s == p - 2 ? 2 : s == p - 3 ? 3 : p - s - 1;
                CHECK(recomputes == expected);
            }
}

TEST_CASE("SCP preconditions: p >= 2, m >= p, m >= 4, recompute full or stage-aware") {
    CHECK(scp_unsupported_reason(1, 8).has_value());
    CHECK(scp_unsupported_reason(4, 3).has_value());
    CHECK(scp_unsupported_reason(2, 3).has_value());
    CHECK(scp_unsupported_reason(8, 7).has_value());
    CHECK_FALSE(scp_unsupported_reason(4, 4).has_value());
    const auto rejected_key = [](int p, int m, Recompute r) -> std::string {
        Scenario sc = test::tiny_scenario(1, p, 1, m, 8);
        sc.parallel.schedule = Schedule::ShiftedCriticalPath;
        sc.parallel.recompute = r;
        try {
            validate_plan(sc);
        } catch (const InputError& e) {
            return e.where().key;
        }
        return "";
    };
    CHECK(rejected_key(4, 3, Recompute::Full) == "parallel.schedule");
    CHECK(rejected_key(1, 8, Recompute::Full) == "parallel.schedule");
    CHECK(rejected_key(4, 8, Recompute::None) == "parallel.recompute");
    CHECK(rejected_key(4, 8, Recompute::Selective) == "parallel.recompute");
    CHECK(rejected_key(4, 8, Recompute::Full).empty());
    CHECK(rejected_key(4, 8, Recompute::StageAware).empty());
}

TEST_CASE("describe_schedule prints one line per stage in F/Fc/R/B notation") {
    Scenario sc = test::tiny_scenario(1, 4, 1, 8, 8);
    sc.parallel.schedule = Schedule::ShiftedCriticalPath;
    sc.parallel.recompute = Recompute::Full;
    const std::string text = describe_schedule(sc);
    CHECK(text.rfind("s0: F0 F1 F2 F3 B0 F4 B1 Fc5 B2", 0) == 0);
    CHECK(text.find("s2: Fc0 Fc1 F2 R0 B0 R1 B1 F3 B2") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);
}
