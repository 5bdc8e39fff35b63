// Shortest-path routing on the topology graph with deterministic ECMP.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "hardware_models/topology.hpp"
#include "hardware_models/vertex_levels.hpp"

namespace cuboid::hw {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser: a well-spread deterministic hash
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

// Routes by (src, dst): an open-addressing table whose slots readers probe without a lock (a
// sweep asks tens of thousands of routes a point from every thread, and a reader-writer lock
// makes each lookup two atomic writes to one shared cache line). Writers insert under `mutex`.
// A slot's route is published before its key (release), so a reader that sees the key sees the
// route. The table is never resized in place: a full one is copied into one twice as large, which
// then replaces it, and the old one stays allocated (readers may still probe it) until the
// topology dies; together they take at most twice the last one's size. Routes live in a deque,
// whose elements never move, so views of them stay valid.
struct Topology::RouteCache {
    static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // src == dst: never stored
    struct Slot {
        std::atomic<std::uint64_t> key{kEmpty};
        std::atomic<const std::vector<sim::LinkId>*> route{nullptr};
    };
    struct Table {
        std::size_t mask = 0;  // slots - 1, a power of two less one
        std::unique_ptr<Slot[]> slots;
        explicit Table(std::size_t size) : mask(size - 1), slots(std::make_unique<Slot[]>(size)) {}
    };

    std::atomic<const Table*> current{nullptr};
    std::mutex mutex;                                  // writers only
    std::vector<std::unique_ptr<Table>> tables;        // current last, the older ones still probed
    std::deque<std::vector<sim::LinkId>> routes;       // the stored routes, never moved
    std::size_t used = 0;                              // slots filled in the current table
    // Network levels (hops through leaf/spine switches) from the switches next to each leaf that a
    // route has left from so far (switch_levels): one search serves every destination of every NIC
    // under every leaf with the same switch neighbours (a pod, a rail, or the whole network of a
    // two-tier fat tree), not one search per leaf.
    std::mutex levels_mutex;
    std::map<std::vector<Vertex>, std::vector<std::int8_t>> neighbour_levels;  // nodes never move
    std::unordered_map<Vertex, const std::vector<std::int8_t>*> leaf_levels;

    RouteCache() {
        tables.push_back(std::make_unique<Table>(std::size_t{1} << 12));
        current.store(tables.back().get(), std::memory_order_release);
    }

    static const std::vector<sim::LinkId>* find(const Table& t, std::uint64_t key) {
        for (std::size_t i = mix(key) & t.mask;; i = (i + 1) & t.mask) {
            const std::uint64_t k = t.slots[i].key.load(std::memory_order_acquire);
            if (k == key) return t.slots[i].route.load(std::memory_order_acquire);
            if (k == kEmpty) return nullptr;
        }
    }
    const std::vector<sim::LinkId>* find(std::uint64_t key) const {
        return find(*current.load(std::memory_order_acquire), key);
    }

    // Under `mutex`: a slot for `key` that no reader can see yet, filled with `route`.
    static void put(const Table& t, std::uint64_t key, const std::vector<sim::LinkId>* route) {
        std::size_t i = mix(key) & t.mask;
        while (t.slots[i].key.load(std::memory_order_relaxed) != kEmpty) i = (i + 1) & t.mask;
        t.slots[i].route.store(route, std::memory_order_relaxed);
        t.slots[i].key.store(key, std::memory_order_release);
    }

    // Stores `path` unless a racing thread stored the pair first; returns the stored route.
    const std::vector<sim::LinkId>& insert(std::uint64_t key, std::vector<sim::LinkId> path) {
        const std::lock_guard lock(mutex);
        const Table& t = *tables.back();
        if (const auto* found = find(t, key)) return *found;
        const auto* route = &routes.emplace_back(std::move(path));
        if (2 * (used + 1) > t.mask + 1) grow();  // load factor at most 1/2: probes stay short
        put(*tables.back(), key, route);
        ++used;
        return *route;
    }

    void grow() {
        const Table& old = *tables.back();
        auto bigger = std::make_unique<Table>(2 * (old.mask + 1));
        for (std::size_t i = 0; i <= old.mask; ++i) {
            const std::uint64_t k = old.slots[i].key.load(std::memory_order_relaxed);
            if (k != kEmpty) put(*bigger, k, old.slots[i].route.load(std::memory_order_relaxed));
        }
        tables.push_back(std::move(bigger));
        current.store(tables.back().get(), std::memory_order_release);
    }
};

Topology::Topology() : routes_(std::make_unique<RouteCache>()) {}
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

bool Topology::may_cross(Vertex v, bool intra_domain, int domain) const {
    const TopologyVertex& tv = graph_[v];
    if (intra_domain)
        return tv.node >= 0 && tv.node / params_.nodes_per_domain == domain &&
               (tv.kind == VertexKind::NvSwitch || tv.kind == VertexKind::PcieSwitch || tv.kind == VertexKind::Host);
    return tv.kind == VertexKind::Leaf || tv.kind == VertexKind::Spine;
}

namespace {

// The (seed mod n)-th of the n edges of `edges` that `matches` accepts, in their order.
template <class Edges, class Matches>
auto nth_matching(const Edges& edges, const Matches& matches, std::uint64_t seed) {
    auto pick = seed % static_cast<std::uint64_t>(std::count_if(edges.begin(), edges.end(), matches));
    auto it = edges.begin();
    while (!matches(*it) || pick-- != 0) ++it;
    return *it;
}

}  // namespace

// The walk back from `dst` (at level `dst_level`) to `src`: at each vertex the (seed mod n)-th of
// the n in-edges from the level before, in edge order. `level` gives every other vertex's level
// (-1 for one the search did not label). `second`, when not the null vertex, is the only vertex at
// level 1.
template <class Level>
std::vector<sim::LinkId> Topology::walk_back(const TopologyGraph& g, Vertex src, Vertex dst, int dst_level,
                                             const Level& level, std::uint64_t seed, Vertex second) {
    std::vector<sim::LinkId> reversed;
    int at = dst_level;
    for (Vertex v = dst; v != src; --at) {
        if (at == 2 && second != boost::graph_traits<TopologyGraph>::null_vertex()) {
            // Every in-edge from level 1 comes from `second`: count its out-edges to v instead of
            // v's in-edges, which on a spine are one per leaf of the cluster. The parallel edges
            // second -> v are in the same order in both lists (the order they were added).
            const auto to_v = [&](const auto& e) { return boost::target(e, g) == v; };
            reversed.push_back(g[nth_matching(boost::make_iterator_range(boost::out_edges(second, g)), to_v, seed)].link);
            v = second;
            continue;
        }
        const auto from_before = [&](const auto& e) { return level(boost::source(e, g)) == at - 1; };
        const auto e = nth_matching(boost::make_iterator_range(boost::in_edges(v, g)), from_before, seed);
        reversed.push_back(g[e].link);
        v = boost::source(e, g);
    }
    return {reversed.rbegin(), reversed.rend()};
}

// BFS from src until dst's level is complete, through switches only (of src's node, or of the
// network); then walks back from dst choosing among equal-cost predecessors by `seed`.
// Across the network the seed is the destination NIC's port on its leaf: InfiniBand forwards by
// destination (linear forwarding tables), and OpenSM's fat-tree routing spreads the destinations of
// a leaf over the up-ports as D-mod-K does, so each destination of a leaf comes down its own spine
// and shift permutations (rings) see no contention. The port, not the NIC's global number: on a
// rail-optimized fabric a leaf holds one rail's NICs (every m-th number), and numbers modulo the
// spine count would bring all of them down a few spines (Zahavi et al., "Optimized InfiniBand fat-tree routing for shift
// all-to-all communication patterns", CCPE 2010).
std::vector<sim::LinkId> Topology::bfs(Vertex src, Vertex dst, bool intra_domain, std::uint64_t seed) const {
    const int domain = graph_[src].node / params_.nodes_per_domain;
    // Levels are path lengths (a handful of hops), kept for the labelled vertices only.
    VertexLevels level;
    std::vector<Vertex> queue{src};  // FIFO: pops advance `head`
    level.set(src, 0);
    for (std::size_t head = 0; head < queue.size() && level(dst) < 0; ++head) {
        const Vertex u = queue[head];
        const auto next = static_cast<std::int8_t>(level(u) + 1);
        for (const auto e : boost::make_iterator_range(boost::out_edges(u, graph_))) {
            const Vertex v = boost::target(e, graph_);
            if (level(v) >= 0 || (v != dst && !may_cross(v, intra_domain, domain))) continue;
            level.set(v, next);
            queue.push_back(v);
        }
    }
    if (level(dst) < 0) throw std::logic_error("topology: no route between two GPUs");
    return walk_back(graph_, src, dst, level(dst), level, seed, boost::graph_traits<TopologyGraph>::null_vertex());
}

// Levels through network switches only, the whole network (-1: unreachable), from a set of
// switches (all at level 0).
std::vector<std::int8_t> Topology::switch_levels(std::span<const Vertex> sources) const {
    std::vector<std::int8_t> level(boost::num_vertices(graph_), -1);
    std::vector<Vertex> queue(sources.begin(), sources.end());
    for (const Vertex s : sources) level[s] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
        const Vertex u = queue[head];
        for (const auto e : boost::make_iterator_range(boost::out_edges(u, graph_))) {
            const Vertex v = boost::target(e, graph_);
            if (level[v] >= 0 || !may_cross(v, false, -1)) continue;
            level[v] = static_cast<std::int8_t>(level[u] + 1);
            queue.push_back(v);
        }
    }
    return level;
}

// The levels of every switch from `leaf` through switches, less one (see network_route): those
// from the set of switches the leaf links to. A shortest path from the leaf to any other switch
// starts with an edge to one of them, so its length is 1 + the distance from that set; only the
// leaf's own level (0) differs, and network_route reads that one apart. Leaves with the same
// neighbours share the array.
const std::vector<std::int8_t>& Topology::levels_beyond(Vertex leaf) const {
    const std::lock_guard lock(routes_->levels_mutex);
    auto [at, added] = routes_->leaf_levels.try_emplace(leaf, nullptr);
    if (!added) return *at->second;
    std::vector<Vertex> next;
    for (const auto e : boost::make_iterator_range(boost::out_edges(leaf, graph_))) {
        const Vertex v = boost::target(e, graph_);
        if (may_cross(v, false, -1)) next.push_back(v);
    }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    auto [levels, searched] = routes_->neighbour_levels.try_emplace(next);
    if (searched) levels->second = switch_levels(next);
    at->second = &levels->second;
    return levels->second;
}

// The same route as bfs(src, dst, false, seed) between two NICs, from the levels of src's leaf.
// bfs labels src 0 and then only switches (dst aside), whose levels are path lengths through
// switches. When every switch src links to is one leaf, each such path starts src -> leaf, so a
// switch's level from src is 1 + its level from the leaf: the leaf's levels, shared by every NIC
// under it and every destination, give bfs's labels exactly. dst's level is then 1 + the least
// level among its labelled predecessors, and the walk back (which only ever compares levels one
// below the vertex it stands on, so never dst's own) is bfs's. A NIC on several switches falls
// back to bfs.
std::vector<sim::LinkId> Topology::network_route(Vertex src, Vertex dst, std::uint64_t seed) const {
    Vertex leaf = src;
    for (const auto e : boost::make_iterator_range(boost::out_edges(src, graph_))) {
        const Vertex v = boost::target(e, graph_);
        if (!may_cross(v, false, -1)) continue;
        if (leaf != src && leaf != v) return bfs(src, dst, false, seed);
        leaf = v;
    }
    if (leaf == src) return bfs(src, dst, false, seed);  // throws: no route
    // Levels from the leaf's neighbours: the leaf is 0 from itself, every other switch one more.
    const std::vector<std::int8_t>& beyond = levels_beyond(leaf);
    // switch_levels labels switches only, so an unlabelled vertex (a NIC, a GPU) is -1 without
    // reading its kind.
    const auto level = [&](Vertex v) -> int {
        if (v == src) return 0;
        if (v == leaf) return 1;
        return beyond[v] < 0 ? -1 : beyond[v] + 2;
    };
    int dst_level = -1;
    for (const auto e : boost::make_iterator_range(boost::in_edges(dst, graph_))) {
        const int l = level(boost::source(e, graph_));
        if (l >= 0 && (dst_level < 0 || l + 1 < dst_level)) dst_level = l + 1;
    }
    if (dst_level < 0) throw std::logic_error("topology: no route between two GPUs");
    return walk_back(graph_, src, dst, dst_level, level, seed, leaf);
}

std::span<const sim::LinkId> Topology::route(std::uint32_t src, std::uint32_t dst) const {
    if (src == dst) return {};
    const std::uint64_t key = (std::uint64_t(src) << 32) | dst;
    if (const auto* found = routes_->find(key)) return *found;
    // Searched outside the lock: a racing thread finds the same path, and the first one stored wins.
    return routes_->insert(key, search_route(src, dst));
}

std::vector<sim::LinkId> Topology::search_route(std::uint32_t src, std::uint32_t dst) const {
    if (domain_of(src) == domain_of(dst)) return bfs(src, dst, true, mix((std::uint64_t(src) << 32) | dst));
    // Across NVLink domains: GPU -> its NIC -> network switches -> the destination's NIC -> GPU.
    std::vector<sim::LinkId> path{gpu_to_nic_[src]};
    const int dst_nic = graph_[nic_of_gpu_[dst]].index + params_.nics_per_node * node_of(dst);
    const auto net = network_route(nic_of_gpu_[src], nic_of_gpu_[dst], params_.leaf_port_of_nic(dst_nic));
    path.insert(path.end(), net.begin(), net.end());
    path.push_back(nic_to_gpu_[dst]);
    return path;
}

int Topology::switch_hops(std::span<const sim::LinkId> route) const {
    int hops = 0;
    for (const sim::LinkId id : route) {
        const VertexKind k = graph_[link_target_[id]].kind;
        hops += (k == VertexKind::Leaf || k == VertexKind::Spine) ? 1 : 0;
    }
    return hops;
}

VertexKind Topology::link_target_kind(sim::LinkId id) const { return graph_[link_target_[id]].kind; }

}  // namespace cuboid::hw
