// Threads as ranks: the exchange of data between them for the program's communication ops.
//
// A collective is an instance per group: the k-th collective every member issues on a group
// (NCCL communicator semantics, as sim executes it). Each member contributes its buffer and gets
// every member's contribution in group order; what it makes of them (sum, concatenation, its own
// shard) is the caller's. Point-to-point groups carry one direction, so a Send appends to the
// group's queue and the k-th Recv takes the k-th message.
//
// A wait that exceeds the timeout aborts the run as a deadlock, and any rank's failure aborts
// every other wait, so a wrong program ends with an error instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuboid::cpu {

using Buffer = std::vector<double>;

struct AbortedError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Fabric {
public:
    Fabric(std::size_t groups, std::chrono::milliseconds timeout) : queues_(groups), timeout_(timeout) {}

    // Instance `instance` of a collective on `group` of `members` ranks; `key` (kind and label)
    // must agree between members. Returns the contributions in member order.
    std::vector<Buffer> exchange(std::uint32_t group, std::size_t members, std::size_t member, std::uint32_t instance,
                                 const std::string& key, Buffer data);
    void send(std::uint32_t group, Buffer data);
    Buffer recv(std::uint32_t group, const std::string& waiting_for);

    // Ends every wait with AbortedError; the first reason is kept.
    void abort(const std::string& why);
    std::optional<std::string> abort_reason() const;

private:
    struct Instance {
        std::string key;
        std::vector<std::optional<Buffer>> parts;
        std::size_t arrived = 0, taken = 0;
    };
    template <class Ready>
    void wait(std::unique_lock<std::mutex>& lock, Ready ready, const std::string& what);

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, Instance> instances_;
    std::vector<std::deque<Buffer>> queues_;
    std::chrono::milliseconds timeout_;
    std::optional<std::string> aborted_;
};

}  // namespace cuboid::cpu
