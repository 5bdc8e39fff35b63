#include "strategies/cli/run_progress.hpp"

#include <fmt/format.h>

namespace cuboid::cli {
namespace {

constexpr std::chrono::duration<double> kQuietFor{1.0};  // no line for runs shorter than this
constexpr std::chrono::milliseconds kRedrawEvery{250};

std::string count_text(std::uint64_t n) {
    if (n >= 1'000'000) return fmt::format("{:.1f} M", static_cast<double>(n) / 1e6);
    if (n >= 10'000) return fmt::format("{:.0f} k", static_cast<double>(n) / 1e3);
    return std::to_string(n);
}

}  // namespace

std::string run_progress_text(const sim::SimProgress& p, double elapsed_s) {
    return fmt::format("run: {:.0f} % of the ops simulated ({} of {}), {:.4g} s of the iteration, {:.0f} s elapsed",
                       100.0 * p.fraction(), count_text(p.ops_done), count_text(p.ops_total), to_seconds(p.now),
                       elapsed_s);
}

std::string run_stage_text(const std::string& stage, double elapsed_s) {
    return fmt::format("run: {}, {:.0f} s elapsed", stage, elapsed_s);
}

RunProgress::RunProgress(std::ostream& err, bool enabled) : line_(err), start_(std::chrono::steady_clock::now()) {
    if (enabled) drawer_ = std::jthread([this](std::stop_token stop) { draw_until_stopped(stop); });
}

RunProgress::~RunProgress() { finish(); }

void RunProgress::stage(std::string text) {
    const std::lock_guard lock(mutex_);
    stage_ = std::move(text);
    report_.reset();
}

void RunProgress::simulated(const sim::SimProgress& p) {
    const std::lock_guard lock(mutex_);
    report_ = p;
}

void RunProgress::finish() {
    if (!drawer_.joinable()) return;
    drawer_.request_stop();
    wake_.notify_all();
    drawer_.join();
    // The line as things ended (the simulation's last report is its end), then a newline; nothing
    // when nothing was drawn.
    if (drawn_) line_.show(text(std::chrono::steady_clock::now()));
    line_.end();
}

std::string RunProgress::text(std::chrono::steady_clock::time_point now) const {
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    return report_ ? run_progress_text(*report_, elapsed) : run_stage_text(stage_, elapsed);
}

void RunProgress::draw_until_stopped(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    // Wakes at every redraw time, or at once when finish() asks it to stop.
    while (!wake_.wait_for(lock, stop, kRedrawEvery, [&stop] { return stop.stop_requested(); })) {
        const auto now = std::chrono::steady_clock::now();
        if (now - start_ < kQuietFor) continue;
        line_.show(text(now));
        drawn_ = true;
    }
}

}  // namespace cuboid::cli
