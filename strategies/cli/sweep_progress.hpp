// A one-line progress display for long sweeps: points done of total, points per second and the
// time left, rewritten in place (carriage return) on a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace cuboid::cli {

class SweepProgress {
public:
    explicit SweepProgress(std::ostream& out) : out_(out), start_(std::chrono::steady_clock::now()) {}

    // Rewrites the line; the last call (done == total) ends it with a newline.
    void update(std::size_t done, std::size_t total);

    // Rewrites the line with `text` (search and what-if progress); end() finishes it.
    void show(const std::string& text);
    void end();

private:
    std::ostream& out_;
    std::chrono::steady_clock::time_point start_;
    bool ended_ = false;
    bool shown_ = false;
};

}  // namespace cuboid::cli
