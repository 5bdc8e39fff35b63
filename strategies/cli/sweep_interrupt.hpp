// Stopping a sweep early without losing it: while a SweepInterrupt lives, SIGINT and SIGTERM do
// not end the process but ask the sweep to stop taking new points; the points in progress finish
// and the rows computed so far are written, marked partial. A second signal ends the process at
// once (the default action is back in place after the first), for a user who will not wait.
#pragma once

#include <atomic>
#include <csignal>

namespace cuboid::cli {

class SweepInterrupt {
public:
    SweepInterrupt();
    ~SweepInterrupt();
    SweepInterrupt(const SweepInterrupt&) = delete;
    SweepInterrupt& operator=(const SweepInterrupt&) = delete;

    // The signal received (SIGINT, SIGTERM), 0 while none: what the sweep's workers poll.
    const std::atomic<int>& flag() const;

    // "SIGINT", "SIGTERM", or "signal N".
    static const char* name(int signal);

private:
    using Handler = void (*)(int);
    Handler previous_int_;
    Handler previous_term_;
};

}  // namespace cuboid::cli
