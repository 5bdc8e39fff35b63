// Stopping a sweep early without losing it: while a SweepInterrupt lives, SIGINT, SIGTERM and
// SIGHUP do not end the process but ask the sweep to stop taking new points and to abandon
// those in progress (run_points); the rows computed so far are written, marked partial. A second signal ends
// the process at once (the default action is back in place after the first), for a user who will
// not wait: an output being written then is abandoned, and its file keeps its old content (or
// stays absent), as every output is replaced whole only once written (sim/output_file.hpp).
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

    // The signal received (SIGINT, SIGTERM, SIGHUP), 0 while none: what the sweep's workers poll.
    const std::atomic<int>& flag() const;

    // "SIGINT", "SIGTERM", "SIGHUP", or "a signal".
    static const char* name(int signal);

private:
    using Handler = void (*)(int);
    Handler previous_int_;
    Handler previous_term_;
    Handler previous_hup_;
};

}  // namespace cuboid::cli
