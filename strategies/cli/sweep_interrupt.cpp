#include "strategies/cli/sweep_interrupt.hpp"

namespace cuboid::cli {
namespace {

// A signal handler can reach nothing but objects of static storage, and only lock-free atomics
// among them (C++20 [support.signal]); this flag is the one piece of process state the sweep
// keeps, and it is written only here and reset when the sweep installs its handlers.
std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
    g_received.store(signal);
    std::signal(signal, SIG_DFL);  // the second Ctrl-C ends the process
}

}  // namespace

SweepInterrupt::SweepInterrupt() {
    g_received.store(0);
    previous_int_ = std::signal(SIGINT, on_stop_signal);
    previous_term_ = std::signal(SIGTERM, on_stop_signal);
    previous_hup_ = std::signal(SIGHUP, on_stop_signal);  // the terminal closed: keep what was run
}

SweepInterrupt::~SweepInterrupt() {
    std::signal(SIGINT, previous_int_ == SIG_ERR ? SIG_DFL : previous_int_);
    std::signal(SIGTERM, previous_term_ == SIG_ERR ? SIG_DFL : previous_term_);
    std::signal(SIGHUP, previous_hup_ == SIG_ERR ? SIG_DFL : previous_hup_);
}

const std::atomic<int>& SweepInterrupt::flag() const { return g_received; }

const char* SweepInterrupt::name(int signal) {
    if (signal == SIGINT) return "SIGINT";
    if (signal == SIGTERM) return "SIGTERM";
    if (signal == SIGHUP) return "SIGHUP";
    return "a signal";
}

}  // namespace cuboid::cli
