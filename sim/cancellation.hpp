// Stopping a long computation early at the caller's request: the caller owns a flag that any
// thread (or a signal handler: a lock-free atomic is all one may touch) sets non-zero, and the
// computation polls it at points where giving up is cheap, then throws Cancelled. The flag says
// nothing of why; a computation that is never asked to stop runs exactly as without one.
#pragma once

#include <atomic>
#include <stdexcept>

namespace cuboid::sim {

// What a cancelled computation throws: it has no result, and its caller asked for none.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled at the caller's request") {}
};

class Cancellation {
public:
    Cancellation() = default;  // never requested
    explicit Cancellation(const std::atomic<int>* flag) : flag_(flag) {}

    bool requested() const { return flag_ != nullptr && flag_->load(std::memory_order_relaxed) != 0; }
    void throw_if_requested() const {
        if (requested()) throw Cancelled();
    }

private:
    const std::atomic<int>* flag_ = nullptr;
};

}  // namespace cuboid::sim
