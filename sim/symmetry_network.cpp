// Network side of symmetry.hpp: the link permutation of each generator, matched from routes, and
// the plans of every request compared with those of its images.
#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

#include "sim/symmetry.hpp"

namespace cuboid::sim {
namespace {

constexpr std::uint32_t kUnmapped = 0xffffffffU;

// GPU pairs as (a << 32 | b), a != b: an open-addressing set (a generator matches up to millions
// of pairs in a sweep, and a node-based set allocates for each).
class PairSet {
public:
    // True when `key` was not in the set yet.
    bool insert(std::uint64_t key) {
        if (2 * (used_ + 1) > slots_.size()) grow();
        if (!place(slots_, key)) return false;
        ++used_;
        return true;
    }

private:
    static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // a == b: never a key

    static std::uint64_t spread(std::uint64_t x) {  // splitmix64 finaliser
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }
    static bool place(std::vector<std::uint64_t>& slots, std::uint64_t key) {
        const std::size_t mask = slots.size() - 1;
        for (std::size_t i = spread(key) & mask;; i = (i + 1) & mask) {
            if (slots[i] == key) return false;
            if (slots[i] == kEmpty) {
                slots[i] = key;
                return true;
            }
        }
    }
    void grow() {
        std::vector<std::uint64_t> bigger(std::max<std::size_t>(64, 2 * slots_.size()), kEmpty);
        for (const std::uint64_t k : slots_)
            if (k != kEmpty) place(bigger, k);
        slots_ = std::move(bigger);
    }

    std::vector<std::uint64_t> slots_;
    std::size_t used_ = 0;
};

// pi_g, grown as plans need it: every binding is checked against those made before.
class LinkMap {
public:
    LinkMap(const RankMap& g, std::span<const Link> links, TransferPlanner& planner)
        : g_(g), links_(links), planner_(planner), image_(links.size(), kUnmapped), preimage_(links.size(), kUnmapped) {}

    std::uint32_t operator[](LinkId l) const { return image_[l]; }
    const std::vector<std::uint32_t>& images() const { return image_; }

    // Maps every link of `plan` by matching routes between members of `ranks`: ring neighbours
    // first (what ring plans cross), then the edges of the two binary trees laid out as heaps
    // over the members, one mirrored (what tree plans cross when each member is on a node of its
    // own), then every ordered pair, until none is left. False when a route pair disagrees with
    // an earlier binding or a link stays unmapped. A plan link's image is forced by any route
    // pair through it, so which pairs bind it changes the cost, not the map (and the quotient
    // reads only plan links, whose images the plan comparison then checks); the order matters
    // because a data-parallel group of a thousand members has a million pairs, and matching all
    // of them cost more than the simulation folding saves.
    bool cover(const TransferPlan& plan, std::span<const std::uint32_t> ranks) {
        if (!broken_ && all_mapped(plan)) return true;
        const std::size_t n = ranks.size();
        for (std::size_t i = 0; i < n && !broken_; ++i) {
            if (!match(ranks[i], ranks[(i + 1) % n]) || !match(ranks[(i + 1) % n], ranks[i])) return false;
        }
        if (!broken_ && all_mapped(plan)) return true;
        for (std::size_t i = 1; i < n && !broken_; ++i) {
            const std::size_t parent = (i - 1) / 2;
            const std::uint32_t a = ranks[i], b = ranks[parent];
            const std::uint32_t ma = ranks[n - 1 - i], mb = ranks[n - 1 - parent];
            if (!match(a, b) || !match(b, a) || !match(ma, mb) || !match(mb, ma)) return false;
        }
        for (std::size_t i = 0; i < n && !broken_ && !all_mapped(plan); ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                if (!match(ranks[i], ranks[j])) return false;
            }
        }
        return !broken_ && all_mapped(plan);
    }

private:
    bool all_mapped(const TransferPlan& plan) const {
        for (const TransferPhase& ph : plan.phases) {
            for (const Flow& f : ph.flows) {
                for (const LinkUse& u : f.links) {
                    if (u.weight > 0.0 && (u.link >= image_.size() || image_[u.link] == kUnmapped)) return false;
                }
            }
        }
        return true;
    }

    bool match(std::uint32_t a, std::uint32_t b) {
        if (a == b || !done_.insert((std::uint64_t{a} << 32) | b)) return true;
        if (!planner_.route_into(a, b, from_) || !planner_.route_into(g_[a], g_[b], to_) ||
            from_.size() != to_.size())
            return fail();
        for (std::size_t i = 0; i < from_.size(); ++i) {
            if (!bind(from_[i], to_[i])) return fail();
        }
        return true;
    }

    bool bind(LinkId x, LinkId y) {
        if (x >= image_.size() || y >= image_.size()) return false;
        if (image_[x] == kUnmapped && preimage_[y] == kUnmapped) {
            if (links_[x].bandwidth.value != links_[y].bandwidth.value) return false;
            image_[x] = y;
            preimage_[y] = x;
            return true;
        }
        return image_[x] == y && preimage_[y] == x;
    }

    bool fail() {
        broken_ = true;
        return false;
    }

    const RankMap& g_;
    std::span<const Link> links_;
    TransferPlanner& planner_;
    std::vector<std::uint32_t> image_;
    std::vector<std::uint32_t> preimage_;
    PairSet done_;                            // GPU pairs matched so far
    std::vector<LinkId> from_, to_;           // the routes of the pair being matched
    bool broken_ = false;
};

// Compares phases as multisets of flows, each a multiset of (link, weight) with its bytes: both
// phases are brought to a canonical form (a flow's uses sorted, flows sorted by uses then bytes),
// the plan's links renamed by pi first. The buffers are kept from one comparison to the next.
class PlanComparer {
public:
    bool same(const TransferPlan& image, const TransferPlan& plan, const LinkMap& pi) {
        if (image.phases.size() != plan.phases.size()) return false;
        for (std::size_t p = 0; p < plan.phases.size(); ++p) {
            if (image.phases[p].latency != plan.phases[p].latency) return false;
            if (image.phases[p].flows.size() != plan.phases[p].flows.size()) return false;
            canonical(image.phases[p], nullptr, a_);
            canonical(plan.phases[p], &pi, b_);
            if (!equal(a_, b_)) return false;
        }
        return true;
    }

private:
    using Use = std::pair<LinkId, double>;
    struct FlowKey {
        std::size_t begin, end;  // its uses: uses[begin, end)
        double bytes;
    };
    struct Canonical {
        std::vector<Use> uses;
        std::vector<FlowKey> flows;
    };

    // Uses of weight 0 carry nothing and are left out; links renamed by `rename` (null: kept).
    static void canonical(const TransferPhase& phase, const LinkMap* rename, Canonical& out) {
        out.uses.clear();
        out.flows.clear();
        for (const Flow& f : phase.flows) {
            const std::size_t begin = out.uses.size();
            for (const LinkUse& u : f.links) {
                if (u.weight > 0.0) out.uses.emplace_back(rename ? (*rename)[u.link] : u.link, u.weight);
            }
            std::sort(out.uses.begin() + static_cast<std::ptrdiff_t>(begin), out.uses.end());
            out.flows.push_back({begin, out.uses.size(), f.bytes.value});
        }
        const auto& uses = out.uses;
        std::sort(out.flows.begin(), out.flows.end(), [&uses](const FlowKey& x, const FlowKey& y) {
            const auto c = std::lexicographical_compare(uses.begin() + x.begin, uses.begin() + x.end,
                                                        uses.begin() + y.begin, uses.begin() + y.end);
            if (c) return true;
            const bool same_uses = std::equal(uses.begin() + x.begin, uses.begin() + x.end,
                                              uses.begin() + y.begin, uses.begin() + y.end);
            return same_uses && x.bytes < y.bytes;
        });
    }

    static bool equal(const Canonical& x, const Canonical& y) {
        if (x.flows.size() != y.flows.size()) return false;
        for (std::size_t i = 0; i < x.flows.size(); ++i) {
            const FlowKey& f = x.flows[i];
            const FlowKey& g = y.flows[i];
            if (f.bytes != g.bytes || !std::equal(x.uses.begin() + f.begin, x.uses.begin() + f.end,
                                                  y.uses.begin() + g.begin, y.uses.begin() + g.end))
                return false;
        }
        return true;
    }

    Canonical a_, b_;
};

// The request the simulation makes for the image group: a pair's sender maps with the ranks,
// any other source is the image group's first rank (as the executor passes it).
TransferRequest image_request(const Program& program, const TransferRequest& q, const RankMap& g,
                              const std::vector<std::uint32_t>& group_map) {
    TransferRequest image = q;
    image.group = group_map[q.group];
    image.source = q.kind == OpKind::Send ? g[q.source] : program.groups[image.group].ranks.front();
    return image;
}

// The requests in the order the generators are checked on them: groups of more ranks first, in
// their given order otherwise. A generator that fails, fails on the network, and the largest groups
// (data-parallel rings across the cluster) cross the most of it: on 65,536 GPUs with leaves that
// split nodes, 13 of 15 generators failed on the first data-parallel group, after matching the
// routes of every tensor-parallel group listed before it (0.9 s of the proof). A generator that
// passes is checked on every request whatever the order; its link map is forced on every link a
// plan uses (LinkMap::cover), and only those links reach the quotient, so the order changes the
// time, not the result.
std::vector<std::uint32_t> largest_groups_first(const Program& program, std::span<const TransferRequest> requests) {
    std::vector<std::uint32_t> order(requests.size());
    std::iota(order.begin(), order.end(), 0U);
    const auto size = [&](std::uint32_t k) { return program.groups[requests[k].group].ranks.size(); };
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return size(x) > size(y); });
    return order;
}

// Whether generator `i` of `symmetry` passes for every request (taken in `order`), growing its
// link map.
bool check_generator(const Program& program, const ProgramSymmetry& symmetry, std::size_t i,
                     std::span<const TransferRequest> requests, std::span<const std::uint32_t> order, LinkMap& pi,
                     TransferPlanner& planner, PlanComparer& compare) {
    for (const std::uint32_t k : order) {
        const TransferRequest& q = requests[k];
        const std::uint32_t image_group = symmetry.group_maps[i][q.group];
        if (image_group == kNoGroup) return false;
        const TransferPlan& plan = planner.plan(q);
        if (!pi.cover(plan, program.groups[q.group].ranks)) return false;
        const TransferPlan& image =
            planner.plan(image_request(program, q, symmetry.generators[i], symmetry.group_maps[i]));
        if (!compare.same(image, plan, pi)) return false;
    }
    return true;
}

}  // namespace

NetworkSymmetry network_symmetry(const Program& program, const ProgramSymmetry& symmetry,
                                 std::span<const TransferRequest> requests, std::span<const Link> links,
                                 TransferPlanner& planner) {
    NetworkSymmetry net;
    std::vector<LinkMap> maps;
    PlanComparer compare;
    const std::vector<std::uint32_t> order = largest_groups_first(program, requests);
    for (std::size_t i = 0; i < symmetry.generators.size(); ++i) {
        LinkMap pi(symmetry.generators[i], links, planner);
        if (!check_generator(program, symmetry, i, requests, order, pi, planner, compare)) continue;
        net.accepted.push_back(i);
        maps.push_back(std::move(pi));
    }
    // Link orbits: union-find over every binding, the smallest link as representative.
    net.link_rep.resize(links.size());
    std::iota(net.link_rep.begin(), net.link_rep.end(), 0U);
    const auto find = [&net](std::uint32_t x) {
        while (net.link_rep[x] != x) x = net.link_rep[x] = net.link_rep[net.link_rep[x]];
        return x;
    };
    for (const LinkMap& m : maps) {
        for (std::uint32_t l = 0; l < links.size(); ++l) {
            if (m[l] == kUnmapped) continue;
            const std::uint32_t a = find(l), b = find(m[l]);
            net.link_rep[std::max(a, b)] = std::min(a, b);
        }
    }
    net.link_orbit.assign(links.size(), 0);
    for (std::uint32_t l = 0; l < links.size(); ++l) ++net.link_orbit[net.link_rep[l] = find(l)];
    for (std::uint32_t l = 0; l < links.size(); ++l) net.link_orbit[l] = net.link_orbit[net.link_rep[l]];
    return net;
}

}  // namespace cuboid::sim
