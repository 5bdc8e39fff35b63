// Network side of symmetry.hpp: the link permutation of each generator, matched from routes, and
// the plans of every request compared with those of its images.
#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "sim/symmetry.hpp"

namespace cuboid::sim {
namespace {

constexpr std::uint32_t kUnmapped = 0xffffffffU;

// pi_g, grown as plans need it: every binding is checked against those made before.
class LinkMap {
public:
    LinkMap(const RankMap& g, std::span<const Link> links, TransferPlanner& planner)
        : g_(g), links_(links), planner_(planner), image_(links.size(), kUnmapped), preimage_(links.size(), kUnmapped) {}

    std::uint32_t operator[](LinkId l) const { return image_[l]; }
    const std::vector<std::uint32_t>& images() const { return image_; }

    // Maps every link of `plan` by matching routes between members of `ranks`: ring neighbours
    // first (what ring plans cross), then every ordered pair, until none is left. False when a
    // route pair disagrees with an earlier binding or a link stays unmapped.
    bool cover(const TransferPlan& plan, std::span<const std::uint32_t> ranks) {
        if (!broken_ && all_mapped(plan)) return true;
        const std::size_t n = ranks.size();
        for (std::size_t i = 0; i < n && !broken_; ++i) {
            if (!match(ranks[i], ranks[(i + 1) % n]) || !match(ranks[(i + 1) % n], ranks[i])) return false;
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
        if (a == b || !done_.insert((std::uint64_t{a} << 32) | b).second) return true;
        const auto from = planner_.route(a, b);
        const auto to = planner_.route(g_[a], g_[b]);
        if (!from || !to || from->size() != to->size()) return fail();
        for (std::size_t i = 0; i < from->size(); ++i) {
            if (!bind((*from)[i], (*to)[i])) return fail();
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
    std::unordered_set<std::uint64_t> done_;  // GPU pairs matched so far
    bool broken_ = false;
};

// A phase as a sorted multiset of flows, each a sorted multiset of (link, weight) and its bytes;
// links renamed by `rename` (null: kept).
using CanonicalFlow = std::pair<std::vector<std::pair<LinkId, double>>, double>;

std::vector<CanonicalFlow> canonical(const TransferPhase& phase, const LinkMap* rename) {
    std::vector<CanonicalFlow> flows;
    flows.reserve(phase.flows.size());
    for (const Flow& f : phase.flows) {
        CanonicalFlow c{{}, f.bytes.value};
        for (const LinkUse& u : f.links) {
            if (u.weight > 0.0) c.first.emplace_back(rename ? (*rename)[u.link] : u.link, u.weight);
        }
        std::sort(c.first.begin(), c.first.end());
        flows.push_back(std::move(c));
    }
    std::sort(flows.begin(), flows.end());
    return flows;
}

bool same_plan(const TransferPlan& image, const TransferPlan& plan, const LinkMap& pi) {
    if (image.phases.size() != plan.phases.size()) return false;
    for (std::size_t p = 0; p < plan.phases.size(); ++p) {
        if (image.phases[p].latency != plan.phases[p].latency) return false;
        if (image.phases[p].flows.size() != plan.phases[p].flows.size()) return false;
        if (canonical(image.phases[p], nullptr) != canonical(plan.phases[p], &pi)) return false;
    }
    return true;
}

// The request the simulation makes for the image group: a pair's sender maps with the ranks,
// any other source is the image group's first rank (as the executor passes it).
TransferRequest image_request(const Program& program, const TransferRequest& q, const RankMap& g,
                              const std::vector<std::uint32_t>& group_map) {
    TransferRequest image = q;
    image.group = group_map[q.group];
    image.source = q.kind == OpKind::Send ? g[q.source] : program.groups[image.group].ranks.front();
    return image;
}

// Whether generator `i` of `symmetry` passes for every request, growing its link map.
bool check_generator(const Program& program, const ProgramSymmetry& symmetry, std::size_t i,
                     std::span<const TransferRequest> requests, LinkMap& pi, TransferPlanner& planner) {
    for (const TransferRequest& q : requests) {
        const std::uint32_t image_group = symmetry.group_maps[i][q.group];
        if (image_group == kNoGroup) return false;
        const TransferPlan& plan = planner.plan(q);
        if (!pi.cover(plan, program.groups[q.group].ranks)) return false;
        const TransferPlan& image =
            planner.plan(image_request(program, q, symmetry.generators[i], symmetry.group_maps[i]));
        if (!same_plan(image, plan, pi)) return false;
    }
    return true;
}

}  // namespace

NetworkSymmetry network_symmetry(const Program& program, const ProgramSymmetry& symmetry,
                                 std::span<const TransferRequest> requests, std::span<const Link> links,
                                 TransferPlanner& planner) {
    NetworkSymmetry net;
    std::vector<LinkMap> maps;
    for (std::size_t i = 0; i < symmetry.generators.size(); ++i) {
        LinkMap pi(symmetry.generators[i], links, planner);
        if (!check_generator(program, symmetry, i, requests, pi, planner)) continue;
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
