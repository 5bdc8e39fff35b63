#include "strategies/cli/sweep_hardware_cache.hpp"

#include <fmt/format.h>

namespace cuboid::cli {

std::string cluster_key(const hw::ClusterSpec& c) {
    // {:a}: hexadecimal floating point, exact, so two specs differing in the last bit differ.
    return fmt::format("{}|{}|{}|{}|{}|{:a}|{}|{:a}|{}|{}|{:a}|{}", c.gpu, c.nodes, c.gpus_per_node,
                       c.domain_gpus(), static_cast<int>(c.intra_node), c.intra_node_gbps.value_or(-1.0),
                       static_cast<int>(c.inter_node), c.nic_gbps, c.nics_per_node,
                       static_cast<int>(c.topology), c.oversubscription, c.profile.value_or(""));
}

std::shared_ptr<const hw::Hardware> HardwareCache::get(const hw::ClusterSpec& spec) {
    const std::string key = cluster_key(spec);
    std::promise<std::shared_ptr<const hw::Hardware>> promise;
    std::shared_future<std::shared_ptr<const hw::Hardware>> future;
    {
        const std::lock_guard lock(mutex_);
        const auto it = built_.find(key);
        if (it != built_.end()) {
            future = it->second;
        } else {
            built_.emplace(key, promise.get_future().share());
        }
    }
    // Waits outside the lock, so that other clusters are not held up by this one.
    if (future.valid()) return future.get();
    try {
        auto hardware = hw::Hardware::build(spec, catalog_);
        promise.set_value(hardware);
        return hardware;
    } catch (...) {
        promise.set_exception(std::current_exception());
        throw;
    }
}

std::size_t HardwareCache::size() const {
    const std::lock_guard lock(mutex_);
    return built_.size();
}

}  // namespace cuboid::cli
