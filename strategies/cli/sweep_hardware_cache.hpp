// The hardware model of each distinct cluster of a sweep, built once and shared read-only by
// every point on that cluster (building the topology and its routes costs more than many small
// simulations). Safe to use from several threads: one thread builds a cluster's model while the
// others that need the same cluster wait for it, and threads on other clusters go on.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"

namespace cuboid::cli {

class HardwareCache {
public:
    // `catalog`: the built-in one (hw::Catalog::load_builtin()), which the points' plan
    // partitioner reads as well (RunOptions::builtin_catalog).
    explicit HardwareCache(const hw::Catalog& catalog) : catalog_(catalog) {}

    // Throws what Hardware::build throws (InputError for an impossible cluster), to every caller
    // that asks for that cluster.
    std::shared_ptr<const hw::Hardware> get(const hw::ClusterSpec& spec);

    std::size_t size() const;
    const hw::Catalog& catalog() const { return catalog_; }

private:
    const hw::Catalog& catalog_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_future<std::shared_ptr<const hw::Hardware>>> built_;
};

// Every field of the spec, written out: equal keys mean equal clusters.
std::string cluster_key(const hw::ClusterSpec& spec);

}  // namespace cuboid::cli
