#include "validate/cpu/fabric.hpp"

namespace cuboid::cpu {

template <class Ready>
void Fabric::wait(std::unique_lock<std::mutex>& lock, Ready ready, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!aborted_ && !ready()) {
        if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !aborted_) {
            aborted_ = "deadlock: no progress for " + std::to_string(timeout_.count()) + " ms waiting for " + what;
            changed_.notify_all();
        }
    }
    if (aborted_) throw AbortedError(*aborted_);
}

std::vector<Buffer> Fabric::exchange(std::uint32_t group, std::size_t members, std::size_t member,
                                     std::uint32_t instance, const std::string& key, Buffer data) {
    std::unique_lock<std::mutex> lock(mutex_);
    Instance& in = instances_[{group, instance}];
    if (in.parts.empty()) {
        in.parts.resize(members);
        in.key = key;
    }
    if (in.key != key || in.parts.size() != members) {
        aborted_ = "mismatched collective on group " + std::to_string(group) + ": '" + key + "' meets '" + in.key + "'";
        changed_.notify_all();
        throw AbortedError(*aborted_);
    }
    in.parts[member] = std::move(data);
    ++in.arrived;
    changed_.notify_all();
    wait(lock, [&] { return in.arrived == members; }, key + " on group " + std::to_string(group));
    std::vector<Buffer> out;
    out.reserve(members);
    for (const auto& p : in.parts) out.push_back(*p);
    if (++in.taken == members) instances_.erase({group, instance});
    return out;
}

void Fabric::send(std::uint32_t group, Buffer data) {
    const std::lock_guard<std::mutex> lock(mutex_);
    queues_.at(group).push_back(std::move(data));
    changed_.notify_all();
}

Buffer Fabric::recv(std::uint32_t group, const std::string& waiting_for) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto& q = queues_.at(group);
    wait(lock, [&] { return !q.empty(); }, waiting_for + " on group " + std::to_string(group));
    Buffer b = std::move(q.front());
    q.pop_front();
    return b;
}

void Fabric::abort(const std::string& why) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) aborted_ = why;
    changed_.notify_all();
}

std::optional<std::string> Fabric::abort_reason() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return aborted_;
}

}  // namespace cuboid::cpu
