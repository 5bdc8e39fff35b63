// `cuboid run`'s progress line: a whole iteration of a 100,000-GPU cluster takes tens of seconds,
// of which the first several go to preparing the simulation (the symmetry proof, the analysis of
// exclusive transfers), and a person at a terminal should see that it works and how far it is.
// A thread of its own redraws the line four times a second from what it was last told, so that a
// long phase without reports still shows its time; nothing is drawn in a run's first second
// (short runs print nothing). The simulation only stores its reports.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

#include "sim/progress.hpp"
#include "strategies/cli/sweep_progress.hpp"

namespace cuboid::cli {

// "run: 43 % of the ops simulated (1.2 M of 2.8 M), 4.91 s of the iteration, 3 s elapsed".
std::string run_progress_text(const sim::SimProgress& p, double elapsed_s);
// "run: preparing the simulation, 3 s elapsed".
std::string run_stage_text(const std::string& stage, double elapsed_s);

class RunProgress {
public:
    // Draws on `err` when `enabled` (the caller knows whether a person watches it); otherwise
    // every call does nothing and no thread starts.
    RunProgress(std::ostream& err, bool enabled);
    ~RunProgress();  // finish()
    RunProgress(const RunProgress&) = delete;
    RunProgress& operator=(const RunProgress&) = delete;

    // What the run does now, until the simulation reports (and after it, when set again).
    void stage(std::string text);
    // The simulation's report (sim::ProgressCallback).
    void simulated(const sim::SimProgress& p);
    // Stops drawing and ends the line, before anything else is written to the terminal.
    void finish();
    bool drawing() const { return drawer_.joinable(); }

private:
    void draw_until_stopped(std::stop_token stop);
    std::string text(std::chrono::steady_clock::time_point now) const;  // under mutex_, or after the drawer ended

    SweepProgress line_;
    std::chrono::steady_clock::time_point start_;
    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::string stage_ = "preparing the simulation";  // under mutex_
    std::optional<sim::SimProgress> report_;           // under mutex_: the last one, until stage()
    bool drawn_ = false;                               // written by the drawer, read after it ended
    std::jthread drawer_;
};

}  // namespace cuboid::cli
