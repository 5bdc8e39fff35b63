#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/event_queue.hpp"

using cuboid::Time;
using cuboid::sim::EventQueue;

TEST_CASE("events due at the same time run in the order they were scheduled", "[sim][event_queue]") {
    EventQueue<char> q;
    q.push(Time(5), 'a');
    q.push(Time(3), 'b');
    q.push(Time(5), 'c');
    q.push(Time(3), 'd');
    q.push(Time(5), 'e');
    std::string order;
    while (!q.empty()) order += q.pop().payload;
    // Time first (3 before 5), then scheduling order within a time: b d (t=3), a c e (t=5).
    CHECK(order == "bdace");
}

TEST_CASE("an event scheduled for the current time runs after those already due then", "[sim][event_queue]") {
    EventQueue<int> q;
    q.push(Time(7), 1);
    q.push(Time(7), 2);
    const auto first = q.pop();
    q.push(first.time, 3);  // scheduled while handling event 1, due at the same time
    CHECK(q.pop().payload == 2);
    CHECK(q.pop().payload == 3);
    CHECK(q.empty());
}

TEST_CASE("pops follow the total order (time, sequence number)", "[sim][event_queue]") {
    EventQueue<int> q;
    std::uint64_t lcg = 12345;
    constexpr int kEvents = 5000;
    for (int i = 0; i < kEvents; ++i) {
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        q.push(Time(static_cast<std::int64_t>(lcg >> 58)), i);  // 64 distinct times: many ties
    }
    std::vector<bool> seen(kEvents, false);
    auto prev = q.pop();
    seen[static_cast<std::size_t>(prev.payload)] = true;
    while (!q.empty()) {
        const auto e = q.pop();
        const bool ordered = prev.time < e.time || (prev.time == e.time && prev.seq < e.seq);
        REQUIRE(ordered);
        // The sequence number is the scheduling order, which here is the payload.
        REQUIRE(e.seq == static_cast<std::uint64_t>(e.payload));
        seen[static_cast<std::size_t>(e.payload)] = true;
        prev = e;
    }
    CHECK(std::count(seen.begin(), seen.end(), true) == kEvents);
}

TEST_CASE("an event scheduled before the last popped time is a programmer error", "[sim][event_queue]") {
    EventQueue<int> q;
    q.push(Time(10), 1);
    q.pop();  // now = 10
    CHECK_THROWS_AS(q.push(Time(9), 2), std::logic_error);
    CHECK_NOTHROW(q.push(Time(10), 3));
}

TEST_CASE("interleaved pushes and pops match a sorted reference", "[sim][event_queue]") {
    // The queue must pop in (time, push order) exactly as sorting all events by that pair would,
    // whatever the spread of times (the radix buckets are redistributed as time advances).
    EventQueue<int> q;
    std::vector<std::pair<std::int64_t, int>> pending;  // (time, push index): the reference
    std::uint64_t state = 12345;
    const auto next = [&state] {  // xorshift: a fixed pseudo-random sequence
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    std::int64_t now = 0;
    int pushed = 0;
    for (int step = 0; step < 20000; ++step) {
        if (pending.empty() || next() % 3 != 0) {
            // Offsets from 0 to about 2^40 ps, often repeated, so that ties and far buckets both occur.
            const std::int64_t offset = static_cast<std::int64_t>(next() % 4 == 0 ? 0 : next() % (1ULL << (next() % 41)));
            q.push(Time(now + offset), pushed);
            pending.emplace_back(now + offset, pushed++);
            continue;
        }
        const auto it = std::min_element(pending.begin(), pending.end());
        const auto e = q.pop();
        REQUIRE(e.time.value == it->first);
        REQUIRE(e.payload == it->second);
        now = it->first;
        pending.erase(it);
    }
}
