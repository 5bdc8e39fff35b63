#include "validate/cuda/rank_wait.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <thread>

namespace cuboid::validate {
namespace {

// How often the children are polled: short against any run (seconds), long enough to cost nothing.
constexpr std::chrono::milliseconds kPoll{5};

// Reaps `pid` if it has ended; its exit status in `status`.
bool ended(pid_t pid, int& status) { return waitpid(pid, &status, WNOHANG) == pid; }

bool succeeded(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace

RankWaitOutcome wait_for_ranks(const std::vector<pid_t>& children, std::chrono::milliseconds timeout) {
    RankWaitOutcome out;
    std::vector<bool> running(children.size(), true);
    std::size_t left = children.size();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (left > 0) {
        for (std::size_t r = 0; r < children.size(); ++r) {
            int status = 0;
            if (!running[r] || !ended(children[r], status)) continue;
            running[r] = false;
            --left;
            if (succeeded(status) || out.first_failed) continue;
            out.first_failed = static_cast<int>(r);
            for (std::size_t o = 0; o < children.size(); ++o)
                if (running[o]) kill(children[o], SIGTERM);
        }
        if (left == 0) break;
        if (std::chrono::steady_clock::now() >= deadline) {
            for (std::size_t r = 0; r < children.size(); ++r) {
                if (!running[r]) continue;
                kill(children[r], SIGKILL);
                int status = 0;
                waitpid(children[r], &status, 0);
                out.unfinished.push_back(static_cast<int>(r));
            }
            break;
        }
        std::this_thread::sleep_for(kPoll);
    }
    return out;
}

std::string rank_list(const std::vector<int>& ranks) {
    std::string s = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    return s;
}

}  // namespace cuboid::validate
