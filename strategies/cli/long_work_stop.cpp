#include "strategies/cli/long_work_stop.hpp"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "strategies/cli/sweep_interrupt.hpp"

namespace cuboid::cli {
namespace {

// The value flag() takes for a stop that no signal caused: any non-zero value stops the workers.
constexpr int kStoppedByLimit = -1;

}  // namespace

double resident_memory_bytes() {
    std::ifstream statm("/proc/self/statm");
    double size_pages = 0.0, resident_pages = 0.0;
    if (!(statm >> size_pages >> resident_pages)) return 0.0;
    return resident_pages * static_cast<double>(sysconf(_SC_PAGESIZE));
}

LongWorkStop::LongWorkStop(const std::atomic<int>* signal_flag, LongWorkLimits limits)
    : signal_flag_(signal_flag), limits_(limits), start_(std::chrono::steady_clock::now()) {}

double LongWorkStop::elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::optional<double> LongWorkStop::time_left_s() const {
    if (!limits_.time_limit_s) return std::nullopt;
    return std::max(0.0, *limits_.time_limit_s - elapsed_s());
}

void LongWorkStop::stop_for(std::string reason) {
    if (stopped()) return;
    reason_ = std::move(reason);
    flag_.store(kStoppedByLimit);
}

bool LongWorkStop::poll() {
    if (stopped()) return true;
    if (signal_flag_ && signal_flag_->load() != 0) {
        signal_ = signal_flag_->load();
        reason_ = fmt::format("interrupted by {}", SweepInterrupt::name(signal_));
        flag_.store(signal_);
    } else if (limits_.time_limit_s && elapsed_s() >= *limits_.time_limit_s) {
        stop_for(fmt::format("time limit of {:g} s reached", *limits_.time_limit_s));
    } else if (limits_.max_memory_bytes) {
        const double resident = resident_memory_bytes();
        if (resident > *limits_.max_memory_bytes)
            stop_for(fmt::format("memory limit of {:.3g} GiB reached ({:.3g} GiB resident)",
                                 *limits_.max_memory_bytes / double(1ULL << 30), resident / double(1ULL << 30)));
    }
    return stopped();
}

}  // namespace cuboid::cli
