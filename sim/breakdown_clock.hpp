// Charges each moment of a rank's iteration to one part of RankBreakdown, as the events happen.
//
// While the compute stream runs a compute op, the time is that op's (compute or recompute; the
// sums come with the op). While it is idle, the time goes to the communication of this rank that
// is moving data then, by priority tensor > pipeline > data (tensor-parallel collectives sit on
// the critical path of every layer, pipeline transfers between stages, data-parallel reductions
// are the most overlappable), else to the bubble. Every instant is charged exactly once, so the
// parts add up to the rank's finish time.
#pragma once

#include <array>
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
    // A lockstep run (sim/engine_lockstep.cpp) ends `now`. It held a tensor-parallel collective
    // open from its first start while the compute stream looked idle, so the clock charged all of
    // that time to tensor communication; `total` of it (`recompute` recomputation) was compute
    // chains of the run. A chain that started at `running_since` (negative: none) still runs: its
    // time so far is taken off too, and its end (compute_ends) charges all of it.
    void lockstep_ends(Time now, Time total, Time recompute, Time running_since) {
        settle(now);
        parts_.tensor_comm_exposed -= total;
        parts_.compute += total - recompute;
        parts_.recompute += recompute;
        if (running_since >= Time(0)) {
            parts_.tensor_comm_exposed -= now - running_since;
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
        const int k = comm_index(c);
        if (k < 0) return;  // a communication op without a communication category: bubble
        settle(now);
        active_[k] = static_cast<std::uint32_t>(static_cast<int>(active_[k]) + delta);
    }
    static int comm_index(OpCategory c) {
        switch (c) {
            case OpCategory::TensorComm: return 0;
            case OpCategory::PipelineComm: return 1;
            case OpCategory::DataComm: return 2;
            default: return -1;
        }
    }
    void settle(Time now) {
        if (!busy_) {
            const Time gap = now - last_;
            if (active_[0] > 0) parts_.tensor_comm_exposed += gap;
            else if (active_[1] > 0) parts_.pipeline_comm_exposed += gap;
            else if (active_[2] > 0) parts_.data_comm_exposed += gap;
            else parts_.bubble += gap;
        }
        last_ = now;
    }

    RankBreakdown parts_;
    Time last_{0};
    bool busy_ = false;
    std::array<std::uint32_t, 3> active_{};  // transfers moving data: tensor, pipeline, data
};

}  // namespace cuboid::sim
