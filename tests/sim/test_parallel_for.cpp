// sim::parallel_for: every index once, and an exception in any thread reaches the caller after
// every thread is joined (a plain std::thread would end the process with std::terminate, as the
// program builder's did on std::bad_alloc).
#include <catch2/catch.hpp>

#include <atomic>
#include <new>
#include <stdexcept>
#include <vector>

#include "sim/parallel_for.hpp"

using cuboid::sim::parallel_for;

TEST_CASE("parallel_for calls f once per index on any thread count", "[sim][parallel_for]") {
    for (const int threads : {1, 2, 8}) {
        std::vector<std::atomic<int>> calls(100);
        parallel_for(calls.size(), threads, [&](std::size_t i) { ++calls[i]; });
        for (const auto& c : calls) CHECK(c.load() == 1);
    }
    parallel_for(0, 4, [](std::size_t) { FAIL("no index to run"); });
}

TEST_CASE("parallel_for rethrows the first exception in the caller, threads joined", "[sim][parallel_for]") {
    for (const int threads : {1, 2, 4}) {
        std::atomic<int> ran{0};
        const auto throwing = [&](std::size_t i) {
            ++ran;
            if (i % 3 == 1) throw std::bad_alloc();
        };
        CHECK_THROWS_AS(parallel_for(64, threads, throwing), std::bad_alloc);
        CHECK(ran.load() < 64);  // the failure stopped the handing out of indices
    }
    CHECK_THROWS_WITH(parallel_for(8, 2, [](std::size_t) { throw std::runtime_error("stage 3"); }), "stage 3");
}
