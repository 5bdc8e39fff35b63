// The simulation's single event queue: one total order on (time, sequence number).
//
// The sequence number is taken when an event is scheduled, so events due at the same time run in
// the order they were scheduled (first in, first out). There are no numeric priorities: the
// order of simultaneous events is decided by causality alone, which keeps runs reproducible.
#pragma once

#include <cstdint>
#include <cstring>
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

// A 4-ary heap of 16-byte keys, laid out so that the four children of a node fill one 64-byte
// cache line: a pop then costs one line per level (the heap holds one or two events per rank,
// thousands, and the deeper levels miss the first-level cache). Payloads wait in a side table;
// the key carries the slot number below the sequence number, so (time, key) is still the total
// order (time, sequence number).
template <class Payload>
class EventQueue {
public:
    using Event = ScheduledEvent<Payload>;

    EventQueue() = default;
    EventQueue(const EventQueue&) = delete;  // heap_ points into storage_
    EventQueue& operator=(const EventQueue&) = delete;
    EventQueue(EventQueue&&) noexcept = default;  // the buffer moves with its pointer
    EventQueue& operator=(EventQueue&&) noexcept = default;

    void push(Time time, const Payload& payload) {
        if (next_seq_ > kMaxSeq) throw std::length_error("event queue: sequence numbers exhausted");
        std::uint64_t slot = 0;
        if (free_slots_.empty()) {
            slot = payloads_.size();
            if (slot > kSlotMask) throw std::length_error("event queue: too many pending events");
            payloads_.push_back(payload);
        } else {
            slot = free_slots_.back();
            free_slots_.pop_back();
            payloads_[slot] = payload;
        }
        if (size_ == capacity_) grow();
        sift_up(size_++, Entry{static_cast<std::uint64_t>(time.value), (next_seq_++ << kSlotBits) | slot});
    }

    // The earliest event (the first scheduled among equal times), removed from the queue.
    // Precondition: !empty().
    Event pop() {
        const Entry top = heap_[0];
        const auto slot = static_cast<std::uint32_t>(top.tag & kSlotMask);
        Event e{Time(static_cast<std::int64_t>(top.time)), top.tag >> kSlotBits, payloads_[slot]};
        free_slots_.push_back(slot);
        --size_;
        if (size_ > 0) remove_root(heap_[size_]);
        return e;
    }

    Event top() const {
        const Entry t = heap_[0];
        return Event{Time(static_cast<std::int64_t>(t.time)), t.tag >> kSlotBits, payloads_[t.tag & kSlotMask]};
    }
    // Asks the cache for the payload of the earliest event, to overlap its miss with the work on
    // the current one (a hint: a later push may still go before it).
    void prefetch_top() const {
        if (size_ > 0) __builtin_prefetch(&payloads_[heap_[0].tag & kSlotMask]);
    }
    // The payload of the earliest event (precondition: !empty()).
    const Payload& top_payload() const { return payloads_[heap_[0].tag & kSlotMask]; }
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    void reserve(std::size_t n) {
        while (capacity_ < n) grow();
    }

private:
    struct Entry {
        std::uint64_t time;  // picoseconds, never negative
        std::uint64_t tag;   // sequence number << kSlotBits | payload slot
    };
    static constexpr std::size_t kArity = 4;
    static constexpr int kSlotBits = 24;  // 16.7M pending events; 2^40 events per run
    static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
    static constexpr std::uint64_t kMaxSeq = (std::uint64_t{1} << (64 - kSlotBits)) - 1;

    // (time, tag) as one 128-bit number: a single comparison, which the compiler turns into
    // conditional moves instead of hard-to-predict branches.
    __extension__ using Key = unsigned __int128;
    static Key key(const Entry& e) { return (static_cast<Key>(e.time) << 64) | e.tag; }

    void sift_up(std::size_t i, Entry e) {
        const Key k = key(e);
        while (i > 0) {
            const std::size_t parent = (i - 1) / kArity;
            if (!(k < key(heap_[parent]))) break;
            heap_[i] = heap_[parent];
            i = parent;
        }
        heap_[i] = e;
    }

    // Moves the hole at the root down along the smallest children to a leaf, then lets `last`
    // rise from there: the former last event nearly always belongs near the bottom, so this
    // compares less than sifting it down from the top.
    void remove_root(Entry last) {
        const std::size_t n = size_;
        std::size_t i = 0;
        for (;;) {
            const std::size_t first = i * kArity + 1;
            if (first >= n) break;
            std::size_t best = first;
            Key best_key = key(heap_[first]);
            const std::size_t end = first + kArity < n ? first + kArity : n;
            for (std::size_t c = first + 1; c < end; ++c) {
                const Key ck = key(heap_[c]);
                const bool earlier = ck < best_key;
                best = earlier ? c : best;
                best_key = earlier ? ck : best_key;
            }
            heap_[i] = heap_[best];
            i = best;
        }
        sift_up(i, last);
    }

    // Index 0 sits 16 bytes before a 64-byte boundary, so children 4i+1..4i+4 share one line.
    void grow() {
        const std::size_t capacity = capacity_ == 0 ? 256 : capacity_ * 2;
        std::vector<Entry> storage(capacity + kArity);
        const auto address = reinterpret_cast<std::uintptr_t>(storage.data());
        const std::size_t skip = ((48 - address % 64) % 64) / sizeof(Entry);
        Entry* heap = storage.data() + skip;
        if (size_ > 0) std::memcpy(heap, heap_, size_ * sizeof(Entry));
        storage_.swap(storage);
        heap_ = heap;
        capacity_ = capacity;
    }

    std::vector<Entry> storage_;
    Entry* heap_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
    std::vector<Payload> payloads_;
    std::vector<std::uint32_t> free_slots_;
    std::uint64_t next_seq_ = 0;
};

}  // namespace cuboid::sim
