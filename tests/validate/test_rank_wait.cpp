// The launcher's wait for its rank processes (validate/cuda/rank_wait.hpp), with child processes
// that stand in for ranks: one that finishes, one that fails, one that hangs (sleeps far longer
// than the test's timeout).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <vector>

#include "validate/cuda/rank_wait.hpp"

using namespace cuboid::validate;
using namespace std::chrono_literals;

namespace {

enum class Rank { Finishes, Fails, Hangs };

// A child that behaves as `r`; the hang is 60 s, 300 times the timeouts below.
pid_t spawn(Rank r) {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    if (r == Rank::Hangs) sleep(60);
    _exit(r == Rank::Fails ? 1 : 0);
}

std::vector<pid_t> spawn_all(std::initializer_list<Rank> ranks) {
    std::vector<pid_t> pids;
    for (Rank r : ranks) pids.push_back(spawn(r));
    return pids;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("ranks that all finish: no failure, nothing unfinished") {
    const auto w = wait_for_ranks(spawn_all({Rank::Finishes, Rank::Finishes}), 10s);
    CHECK(w.ok());
}

TEST_CASE("the watchdog kills the ranks that hang and names exactly them") {
    const auto t0 = std::chrono::steady_clock::now();
    const auto w = wait_for_ranks(spawn_all({Rank::Finishes, Rank::Hangs, Rank::Finishes, Rank::Hangs}), 200ms);
    CHECK_FALSE(w.first_failed);
    CHECK(w.unfinished == std::vector<int>{1, 3});
    // Returns at the deadline, not after the 60 s sleep: allow a generous margin for a busy machine.
    CHECK(seconds_since(t0) < 10.0);
    CHECK(rank_list(w.unfinished) == "ranks 1, 3");
}

TEST_CASE("a failure stops the other ranks at once, long before the timeout") {
    const auto t0 = std::chrono::steady_clock::now();
    const auto w = wait_for_ranks(spawn_all({Rank::Hangs, Rank::Fails, Rank::Hangs}), 60s);
    CHECK(w.first_failed == 1);
    // The hanging ranks got SIGTERM when rank 1 failed: none was left for the watchdog.
    CHECK(w.unfinished.empty());
    CHECK(seconds_since(t0) < 10.0);
    CHECK(rank_list({2}) == "rank 2");
}
