// The simulation's single event queue: one total order on (time, sequence number).
//
// The sequence number is taken when an event is scheduled, so events due at the same time run in
// the order they were scheduled (first in, first out). There are no numeric priorities: the
// order of simultaneous events is decided by causality alone, which keeps runs reproducible.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/units.hpp"

namespace cuboid::sim {

template <class Payload>
struct ScheduledEvent {
    Time time;
    std::uint64_t seq = 0;
    Payload payload;
};

// A radix heap (Ahuja, Mehlhorn, Orlin & Tarjan 1990) on the time alone. It relies on the queue
// being monotone, as a simulation's is: nothing is scheduled before the last event taken out.
// Bucket b holds the events whose time first differs from that last time in bit b-1 (bucket 0:
// equal times). Taking out the earliest event empties the lowest non-empty bucket into lower
// ones, so an event moves at most 64 times however many events wait, and every move is an
// append, not a cache-missing heap level.
//
// Ties need no comparison: every bucket stays in scheduling order. A push appends the newest
// event, and a bucket is refilled only while it is empty, from one bucket read front to back.
template <class Payload>
class EventQueue {
public:
    using Event = ScheduledEvent<Payload>;

    void push(Time time, const Payload& payload) {
        const auto t = static_cast<std::uint64_t>(time.value);
        if (time.value < 0 || t < last_) throw std::logic_error("event queue: event scheduled in the past");
        const int b = bucket_of(t);
        buckets_[b].push_back(Entry{t, next_seq_++, payload});
        occupied_ |= std::uint64_t{1} << b;
        ++size_;
    }

    // The earliest event (the first scheduled among equal times), removed from the queue.
    // Precondition: !empty().
    Event pop() {
        if (head_ == buckets_[0].size()) refill();
        const Entry& e = buckets_[0][head_++];
        --size_;
        return Event{Time(static_cast<std::int64_t>(e.time)), e.seq, e.payload};
    }

    // The earliest event, left in the queue (precondition: !empty()). It does not move the
    // buckets' reference time, so events may still be scheduled before it.
    Event top() const {
        const Entry& e = front();
        return Event{Time(static_cast<std::int64_t>(e.time)), e.seq, e.payload};
    }
    // The payload of the earliest event (precondition: !empty()).
    const Payload& top_payload() const { return front().payload; }
    // The payload of the next event if it is known without a search (due at the time of the last
    // one taken out), else null: a cheap hint for prefetching.
    const Payload* due_payload() const { return head_ < buckets_[0].size() ? &buckets_[0][head_].payload : nullptr; }
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    void reserve(std::size_t n) { buckets_[0].reserve(n); }

private:
    struct Entry {
        std::uint64_t time;  // picoseconds, never negative
        std::uint64_t seq;
        Payload payload;
    };
    static constexpr int kBuckets = 64;  // times are below 2^63

    int bucket_of(std::uint64_t t) const { return static_cast<int>(std::bit_width(t ^ last_)); }

    // Bucket 0 is spent: the lowest non-empty bucket's earliest time becomes the reference, and
    // its events spread into the buckets below it, in their order.
    void refill() {
        buckets_[0].clear();
        head_ = 0;
        occupied_ &= ~std::uint64_t{1};
        const int b = std::countr_zero(occupied_);
        std::vector<Entry>& from = buckets_[b];
        std::uint64_t least = from.front().time;
        for (const Entry& e : from) least = e.time < least ? e.time : least;
        last_ = least;
        // The bit mask is kept in a register: the appends could alias the member, and a store
        // and reload of it per moved event would chain every iteration to the previous one.
        std::uint64_t occupied = occupied_;
        for (const Entry& e : from) {
            const int to = static_cast<int>(std::bit_width(e.time ^ least));
            buckets_[to].push_back(e);
            occupied |= std::uint64_t{1} << to;
        }
        from.clear();
        occupied_ = occupied & ~(std::uint64_t{1} << b);
    }

    // The earliest entry without moving anything: the first of the earliest time in the lowest
    // non-empty bucket (the first of a time is its first scheduled).
    const Entry& front() const {
        if (head_ < buckets_[0].size()) return buckets_[0][head_];
        const std::vector<Entry>& from = buckets_[std::countr_zero(occupied_ & ~std::uint64_t{1})];
        const Entry* best = &from.front();
        for (const Entry& e : from) best = e.time < best->time ? &e : best;
        return *best;
    }

    std::array<std::vector<Entry>, kBuckets> buckets_;
    std::size_t head_ = 0;          // events of bucket 0 already taken out
    std::uint64_t occupied_ = 0;    // bit b: bucket b holds events
    std::uint64_t last_ = 0;        // time of the last event taken out
    std::size_t size_ = 0;
    std::uint64_t next_seq_ = 0;
};

}  // namespace cuboid::sim
