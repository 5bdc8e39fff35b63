// Charges each moment of a rank's iteration to one part of RankBreakdown, as the events happen.
//
// While the compute stream runs a compute op, the time is that op's (compute or recompute; the
// sums come with the op). While it is idle, the time goes to the communication of this rank that
// is moving data then, to the first class of Program::comm_classes with a transfer in flight (the
// program's builder orders them; cuboid's strategies put the collectives on the critical path of
// every layer first and the most overlappable reductions last), else to the bubble. Every instant
// is charged exactly once, so the parts add up to the rank's finish time.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "sim/executor.hpp"

namespace cuboid::sim {

class BreakdownClock {
public:
    void compute_begins(Time now) {
        settle(now);
        busy_ = true;
    }
    void compute_ends(Time now, Time total, Time recompute) {
        last_ = now;
        busy_ = false;
        parts_.compute += total - recompute;
        parts_.recompute += recompute;
    }
    // A lockstep run (sim/engine_lockstep.cpp) ends `now`. It held a collective of category `held`
    // open from its first start while the compute stream looked idle, so the clock charged all of
    // that time to that communication; `total` of it (`recompute` recomputation) was compute
    // chains of the run. A chain that started at `running_since` (negative: none) still runs: its
    // time so far is taken off too, and its end (compute_ends) charges all of it.
    void lockstep_ends(Time now, OpCategory held, Time total, Time recompute, Time running_since) {
        settle(now);
        Time& exposed = parts_.comm_exposed[static_cast<std::size_t>(comm_class_of(held))];
        exposed -= total;
        parts_.compute += total - recompute;
        parts_.recompute += recompute;
        if (running_since >= Time(0)) {
            exposed -= now - running_since;
            busy_ = true;
        }
    }
    void comm_begins(OpCategory c, Time now) { count(c, now, +1); }
    void comm_ends(OpCategory c, Time now) { count(c, now, -1); }
    // Charges the time up to `now` (the rank's finish).
    void close(Time now) { settle(now); }
    const RankBreakdown& parts() const { return parts_; }

private:
    void count(OpCategory c, Time now, int delta) {
        const int k = comm_class_of(c);
        if (k < 0) return;  // a communication op without a communication category: bubble
        settle(now);
        auto& n = active_[static_cast<std::size_t>(k)];
        n = static_cast<std::uint32_t>(static_cast<int>(n) + delta);
        const auto bit = static_cast<std::uint8_t>(1U << k);
        moving_ = static_cast<std::uint8_t>(n > 0 ? moving_ | bit : moving_ & ~bit);
    }
    void settle(Time now) {
        if (!busy_) {
            const Time gap = now - last_;
            if (moving_ != 0) parts_.comm_exposed[static_cast<std::size_t>(std::countr_zero(moving_))] += gap;
            else parts_.bubble += gap;
        }
        last_ = now;
    }

    RankBreakdown parts_;
    Time last_{0};
    bool busy_ = false;
    static_assert(kMaxCommClasses <= 8, "one bit per class in moving_");
    std::uint8_t moving_ = 0;  // a bit per class with a transfer moving data
    std::array<std::uint32_t, kMaxCommClasses> active_{};  // transfers moving data, per class
};

}  // namespace cuboid::sim
