// Program side of symmetry.hpp: generators checked against the program, orbits of ranks and
// groups, and the requests a simulation can make.
#include <algorithm>
#include <functional>
#include <numeric>
#include <tuple>
#include <unordered_set>

#include "sim/symmetry.hpp"

namespace cuboid::sim {
namespace {

// Union-find whose root is the smallest member, so that the root is the representative.
class Orbits {
public:
    explicit Orbits(std::size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0U); }
    std::uint32_t find(std::uint32_t x) {
        while (parent_[x] != x) {
            parent_[x] = parent_[parent_[x]];
            x = parent_[x];
        }
        return x;
    }
    void join(std::uint32_t a, std::uint32_t b) {
        a = find(a);
        b = find(b);
        if (a < b) parent_[b] = a;
        if (b < a) parent_[a] = b;
    }

private:
    std::vector<std::uint32_t> parent_;
};

bool is_permutation(const RankMap& g, std::size_t n) {
    if (g.size() != n) return false;
    std::vector<bool> seen(n, false);
    for (const std::uint32_t r : g) {
        if (r >= n || seen[r]) return false;
        seen[r] = true;
    }
    return true;
}

// Group -> image group as the slots of r and g(r) name them; empty when the program differs.
std::vector<std::uint32_t> map_groups(const Program& p, const RankMap& g) {
    std::vector<std::uint32_t> image(p.groups.size(), kNoGroup);
    std::vector<std::uint32_t> preimage(p.groups.size(), kNoGroup);
    for (std::uint32_t r = 0; r < p.ranks.size(); ++r) {
        const RankProgram& a = p.ranks[r];
        const RankProgram& b = p.ranks[g[r]];
        if (a.op_list != b.op_list || a.groups.size() != b.groups.size()) return {};
        for (std::size_t k = 0; k < a.groups.size(); ++k) {
            const std::uint32_t from = a.groups[k], to = b.groups[k];
            if (from >= p.groups.size() || to >= p.groups.size()) return {};
            if (image[from] == kNoGroup && preimage[to] == kNoGroup) {
                image[from] = to;
                preimage[to] = from;
            } else if (image[from] != to || preimage[to] != from) {
                return {};
            }
        }
    }
    // The image of a group must hold exactly the images of its ranks.
    std::vector<std::uint32_t> mapped, target;
    for (std::uint32_t from = 0; from < p.groups.size(); ++from) {
        if (image[from] == kNoGroup) continue;
        mapped.clear();
        for (const std::uint32_t r : p.groups[from].ranks) mapped.push_back(r < g.size() ? g[r] : kNoGroup);
        target = p.groups[image[from]].ranks;
        std::sort(mapped.begin(), mapped.end());
        std::sort(target.begin(), target.end());
        if (mapped != target) return {};
    }
    return image;
}

}  // namespace

ProgramSymmetry program_symmetry(const Program& program, std::span<const RankMap> candidates) {
    const std::size_t n = program.ranks.size();
    ProgramSymmetry sym;
    Orbits ranks(n), groups(program.groups.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const RankMap& g = candidates[i];
        if (!is_permutation(g, n)) continue;
        std::vector<std::uint32_t> image = map_groups(program, g);
        if (image.empty() && !program.groups.empty()) continue;
        for (std::uint32_t r = 0; r < n; ++r) ranks.join(r, g[r]);
        for (std::uint32_t G = 0; G < image.size(); ++G) {
            if (image[G] != kNoGroup) groups.join(G, image[G]);
        }
        sym.generators.push_back(g);
        sym.accepted.push_back(i);
        sym.group_maps.push_back(std::move(image));
    }
    sym.rank_rep.resize(n);
    for (std::uint32_t r = 0; r < n; ++r) sym.rank_rep[r] = ranks.find(r);
    std::vector<bool> named(program.groups.size(), false);
    for (const RankProgram& rp : program.ranks) {
        for (const std::uint32_t G : rp.groups) {
            if (G < named.size()) named[G] = true;
        }
    }
    sym.group_rep.assign(program.groups.size(), kNoGroup);
    sym.group_orbit.assign(program.groups.size(), 0);
    for (std::uint32_t G = 0; G < program.groups.size(); ++G) {
        if (!named[G]) continue;
        sym.group_rep[G] = groups.find(G);
        ++sym.group_orbit[sym.group_rep[G]];
    }
    for (std::uint32_t G = 0; G < program.groups.size(); ++G) {
        if (named[G]) sym.group_orbit[G] = sym.group_orbit[sym.group_rep[G]];
    }
    return sym;
}

bool operator<(const TransferRequest& a, const TransferRequest& b) {
    return std::tie(a.group, a.kind, a.bytes.value, a.source) < std::tie(b.group, b.kind, b.bytes.value, b.source);
}
bool operator==(const TransferRequest& a, const TransferRequest& b) {
    return a.group == b.group && a.kind == b.kind && a.bytes.value == b.bytes.value && a.source == b.source;
}

std::vector<TransferRequest> possible_requests(const Program& program) {
    return possible_requests(program, program.ranks, program.groups);
}

std::vector<TransferRequest> possible_requests(const Program& program, std::span<const RankProgram> ranks,
                                               std::span<const Group> groups) {
    struct Use {
        std::uint16_t slot;
        OpKind kind;
        double bytes;
        bool operator<(const Use& o) const { return std::tie(slot, kind, bytes) < std::tie(o.slot, o.kind, o.bytes); }
        bool operator==(const Use& o) const { return slot == o.slot && kind == o.kind && bytes == o.bytes; }
    };
    // Consistent with ==: 0.0 and -0.0 are equal, so both hash as 0.0.
    struct UseHash {
        std::size_t operator()(const Use& u) const {
            const double b = u.bytes == 0.0 ? 0.0 : u.bytes;
            return std::hash<double>{}(b) ^ (std::size_t{u.slot} << 8) ^ static_cast<std::size_t>(u.kind);
        }
    };
    // A list has thousands of communication ops but a few dozen distinct uses: drop the repeats
    // through a hash set before sorting, instead of sorting them all.
    std::vector<std::vector<Use>> uses(program.op_lists.size());
    std::unordered_set<Use, UseHash> seen;
    for (std::size_t l = 0; l < program.op_lists.size(); ++l) {
        seen.clear();
        for (const Op& op : program.op_lists[l].ops) {
            if (!is_communication(op.kind)) continue;
            const Use u{op.group_slot, op.kind, op.bytes.value};
            if (seen.insert(u).second) uses[l].push_back(u);
        }
        std::sort(uses[l].begin(), uses[l].end());
    }
    std::vector<TransferRequest> requests;
    for (std::uint32_t r = 0; r < ranks.size(); ++r) {
        const RankProgram& rp = ranks[r];
        if (rp.op_list >= uses.size()) continue;  // the simulation reports it
        for (const Use& u : uses[rp.op_list]) {
            if (u.slot >= rp.groups.size() || rp.groups[u.slot] >= groups.size()) continue;
            const Group& G = groups[rp.groups[u.slot]];
            if (G.ranks.empty()) continue;
            TransferRequest q{rp.groups[u.slot], u.kind, Bytes(u.bytes), G.ranks.front()};
            if (u.kind == OpKind::Send || u.kind == OpKind::Recv) {
                if (G.ranks.size() != 2) continue;
                q.kind = OpKind::Send;
                q.source = u.kind == OpKind::Send ? r : (G.ranks[0] == r ? G.ranks[1] : G.ranks[0]);
            }
            requests.push_back(q);
        }
    }
    std::sort(requests.begin(), requests.end());
    requests.erase(std::unique(requests.begin(), requests.end()), requests.end());
    return requests;
}

}  // namespace cuboid::sim
