// When a long search or what-if study stops early and why: a signal (through SweepInterrupt), a
// time limit (--time-limit) or a memory limit on the process (--max-memory). poll() is called
// from the thread that watches the workers; once a condition holds, flag() turns non-zero and
// stays so, and the workers (sim::Cancellation over flag()) take no new plan and abandon those in
// progress. What was finished is written, marked partial with reason().
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

namespace cuboid::cli {

struct LongWorkLimits {
    std::optional<double> time_limit_s;       // wall seconds from the start of the work
    std::optional<double> max_memory_bytes;   // resident memory of the process
};

class LongWorkStop {
public:
    // `signal_flag`: SweepInterrupt::flag(), or null for no signal handling.
    LongWorkStop(const std::atomic<int>* signal_flag, LongWorkLimits limits);

    // Checks every condition; true once one has held (the first one found is kept).
    bool poll();
    bool stopped() const { return flag_.load() != 0; }
    const std::atomic<int>& flag() const { return flag_; }

    // The signal that stopped the work, 0 for none (a limit, or not stopped).
    int signal() const { return signal_; }
    // "interrupted by SIGINT", "time limit of 60 s reached", ...; empty while not stopped.
    const std::string& reason() const { return reason_; }
    // Seconds since construction.
    double elapsed_s() const;
    // Seconds until the time limit, none without one.
    std::optional<double> time_left_s() const;

    // Stops the work for a reason the caller found (an internal error).
    void stop_for(std::string reason);

private:
    const std::atomic<int>* signal_flag_;
    LongWorkLimits limits_;
    std::chrono::steady_clock::time_point start_;
    std::atomic<int> flag_{0};
    int signal_ = 0;
    std::string reason_;
};

// The resident memory of this process in bytes (/proc/self/statm), 0 where it cannot be read.
double resident_memory_bytes();

}  // namespace cuboid::cli
