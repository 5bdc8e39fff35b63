#include "strategies/cli/sweep_progress.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace cuboid::cli {

void SweepProgress::update(std::size_t done, std::size_t total) {
    if (ended_) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
    // Time left at the rate so far: the points are not equally long, so it is an estimate.
    const std::string left = rate > 0 ? fmt::format("~{:.0f} s left", (total - done) / rate) : "";
    show(fmt::format("sweep: {}/{} points, {:.1f} points/s, {:.0f} s elapsed, {}", done, total, rate, elapsed, left));
    if (done == total) end();
}

void SweepProgress::show(const std::string& text) {
    if (ended_) return;
    fmt::print(out_, "\r{}\x1b[K", text);
    shown_ = true;
    out_.flush();
}

void SweepProgress::end() {
    if (ended_ || !shown_) return;
    out_ << "\n";
    out_.flush();
    ended_ = true;
}

}  // namespace cuboid::cli
