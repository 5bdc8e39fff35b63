// The single-node launcher's wait for its rank processes, with a watchdog: plain POSIX C++, so it
// is tested with ordinary child processes on a machine without a GPU.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace cuboid::validate {

struct RankWaitOutcome {
    std::optional<int> first_failed;  // the first rank that exited non-zero or died of a signal
    std::vector<int> unfinished;      // ranks still running at the deadline (killed), ascending
    bool ok() const { return !first_failed && unfinished.empty(); }
};

// Waits for `children` (index = rank) and reaps every one before returning. On the first failure
// the others get SIGTERM: they would otherwise wait forever for the failed rank in their next
// collective. At `timeout` every rank still running gets SIGKILL and is listed as unfinished: a
// rank that hangs without failing (a collective whose peers issued another one, a lost NCCL
// connection) would otherwise hold the launcher forever.
RankWaitOutcome wait_for_ranks(const std::vector<pid_t>& children, std::chrono::milliseconds timeout);

// "ranks 1, 3" for the message of a watchdog expiry.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace cuboid::validate
