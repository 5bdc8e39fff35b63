// The simulation's single event queue: one total order on (time, sequence number).
//
// The sequence number is taken when an event is scheduled, so events due at the same time run in
// the order they were scheduled (first in, first out). There are no numeric priorities: the
// order of simultaneous events is decided by causality alone, which keeps runs reproducible.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/units.hpp"

namespace cuboid::sim {

template <class Payload>
struct ScheduledEvent {
    Time time;
    std::uint64_t seq = 0;
    Payload payload;
};

// A 4-ary heap: half the depth of a binary heap and the four children of a node side by side in
// memory, which matters with thousands of pending events (one or two per rank).
template <class Payload>
class EventQueue {
public:
    using Event = ScheduledEvent<Payload>;

    void push(Time time, const Payload& payload) {
        heap_.push_back(Event{time, next_seq_++, payload});
        sift_up(heap_.size() - 1);
    }

    // The earliest event (the first scheduled among equal times), removed from the queue.
    // Precondition: !empty().
    Event pop() {
        Event top = heap_.front();
        const Event last = heap_.back();
        heap_.pop_back();
        if (!heap_.empty()) sift_down(last);
        return top;
    }

    const Event& top() const { return heap_.front(); }
    bool empty() const { return heap_.empty(); }
    std::size_t size() const { return heap_.size(); }
    void reserve(std::size_t n) { heap_.reserve(n); }

private:
    static constexpr std::size_t kArity = 4;

    // (time, seq) as one 128-bit number: a single comparison, which the compiler turns into
    // conditional moves instead of hard-to-predict branches. Times are never negative.
    __extension__ using Key = unsigned __int128;
    static Key key(const Event& e) {
        return (static_cast<Key>(static_cast<std::uint64_t>(e.time.value)) << 64) | e.seq;
    }

    void sift_up(std::size_t i) {
        const Event e = heap_[i];
        const Key k = key(e);
        while (i > 0) {
            const std::size_t parent = (i - 1) / kArity;
            if (!(k < key(heap_[parent]))) break;
            heap_[i] = heap_[parent];
            i = parent;
        }
        heap_[i] = e;
    }

    // Places `e` (the former last event) starting from the root's hole.
    void sift_down(const Event& e) {
        const std::size_t n = heap_.size();
        const Key k = key(e);
        std::size_t i = 0;
        for (;;) {
            const std::size_t first = i * kArity + 1;
            if (first >= n) break;
            std::size_t best = first;
            Key best_key = key(heap_[first]);
            const std::size_t end = std::min(first + kArity, n);
            for (std::size_t c = first + 1; c < end; ++c) {
                const Key ck = key(heap_[c]);
                const bool earlier = ck < best_key;
                best = earlier ? c : best;
                best_key = earlier ? ck : best_key;
            }
            if (!(best_key < k)) break;
            heap_[i] = heap_[best];
            i = best;
        }
        heap_[i] = e;
    }

    std::vector<Event> heap_;
    std::uint64_t next_seq_ = 0;
};

}  // namespace cuboid::sim
