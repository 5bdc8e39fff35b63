// Program side of symmetry.hpp: generators checked against the program, orbits of ranks and
// groups, and the requests a simulation can make.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <tuple>

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

// The distinct uses of a list, as indices into the vector that holds them, in an open-addressed
// table: a lookup is a multiply and a compare or two, where a node-based set allocates and hashes
// the bytes through the library. Equality is CommUse's ==, so 0.0 and -0.0 are one use, and a NaN
// is new each time (as it was for std::unordered_set).
class UseSet {
public:
    void clear() {
        slots_.assign(64, kEmpty);
        size_ = 0;
    }
    // False when `u` is among `held` already; true when it is new (the caller appends it).
    bool insert(const CommUse& u, const std::vector<CommUse>& held) {
        if (u.bytes != u.bytes) return true;  // NaN equals nothing
        if (2 * (size_ + 1) > slots_.size()) grow(held);
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash(u) & mask;; i = (i + 1) & mask) {
            if (slots_[i] == kEmpty) {
                slots_[i] = static_cast<std::uint32_t>(held.size());
                ++size_;
                return true;
            }
            if (held[slots_[i]] == u) return false;
        }
    }

private:
    static constexpr std::uint32_t kEmpty = 0xffffffffU;
    static std::size_t hash(const CommUse& u) {
        const double b = u.bytes == 0.0 ? 0.0 : u.bytes;  // consistent with ==
        const std::uint64_t fields =
            std::uint64_t{u.slot} << 16 | std::uint64_t{u.stream} << 8 | static_cast<std::uint64_t>(u.kind);
        std::uint64_t key = std::bit_cast<std::uint64_t>(b) ^ fields;
        // The bits of a double that vary are its high ones: fold them down before mixing.
        key ^= key >> 29;
        key *= 0x9E3779B97F4A7C15ULL;
        return static_cast<std::size_t>(key ^ (key >> 32));
    }
    void grow(const std::vector<CommUse>& held) {
        std::vector<std::uint32_t> old(slots_.size() * 2, kEmpty);
        old.swap(slots_);
        const std::size_t mask = slots_.size() - 1;
        for (const std::uint32_t k : old) {
            if (k == kEmpty) continue;
            std::size_t i = hash(held[k]) & mask;
            while (slots_[i] != kEmpty) i = (i + 1) & mask;
            slots_[i] = k;
        }
    }
    std::vector<std::uint32_t> slots_;
    std::size_t size_ = 0;
};

// The distinct uses of the communication slots of `index`, sorted. Only the streams that have
// any are read, not the compute stream, which holds most of a list.
std::vector<CommUse> distinct_uses(const OpListIndex& index, UseSet& seen) {
    std::vector<CommUse> uses;
    seen.clear();
    for (int s = 0; s < index.stream_count; ++s) {
        if ((index.comm_streams >> s & 1U) == 0) continue;
        for (const StreamSlot& slot : index.streams[s]) {
            if (!slot.is_comm) continue;
            const CommUse u{slot.group_slot(), slot.kind(), static_cast<StreamId>(s), slot.bytes().value};
            if (seen.insert(u, uses)) uses.push_back(u);
        }
    }
    std::sort(uses.begin(), uses.end());
    return uses;
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
    return possible_requests(program, program.ranks, program.groups, communication_uses(program));
}

// A list has thousands of communication ops but a few dozen distinct uses: drop the repeats
// through a hash set before sorting, instead of sorting them all.
CommUses communication_uses(std::span<const OpListIndex> indexes) {
    CommUses uses(indexes.size());
    UseSet seen;
    for (std::size_t l = 0; l < indexes.size(); ++l) uses[l] = distinct_uses(indexes[l], seen);
    return uses;
}

CommUses communication_uses(const Program& program) {
    // Durations and chains do not matter here: only the communication slots are read.
    ProgramCosts unpriced;
    for (const OpList& list : program.op_lists) unpriced.durations.emplace_back(list.ops.size(), Time(0));
    return communication_uses(index_op_lists(program, unpriced, false));
}

std::vector<TransferRequest> possible_requests(const Program& program, std::span<const RankProgram> ranks,
                                               std::span<const Group> groups, const CommUses& uses) {
    if (uses.size() != program.op_lists.size()) {
        throw std::logic_error("possible requests: one use list per op list expected");
    }
    std::vector<TransferRequest> requests;
    for (std::uint32_t r = 0; r < ranks.size(); ++r) {
        const RankProgram& rp = ranks[r];
        if (rp.op_list >= uses.size()) continue;  // the simulation reports it
        for (const CommUse& u : uses[rp.op_list]) {
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
