// Quotient program, quotient planner and the folded run of fold.hpp.
#include "sim/fold.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "sim/engine.hpp"
#include "sim/fingerprint.hpp"

namespace cuboid::sim {
namespace {

// The folded run asked for something that was not verified: abandon it.
struct FoldBroken : std::runtime_error {
    FoldBroken() : std::runtime_error("symmetry fold broken") {}
};

// The quotient network's links: one per link orbit, numbered in the order of the orbits'
// representatives (each orbit's smallest link), with that link's name and bandwidth. The folded
// run's flow network and exclusive-transfer analysis keep state per link, and a network whose
// generators fold it by k has about a k-th of the links: at 131,072 GPUs folded by 4, 262,154 of
// 1,048,592 (the run's peak memory fell from 988 to 920 MB, below the full run's). The
// numbering keeps the representatives' order, so that a flow's quotient links come in the same
// order as before and every sum over them is the same.
struct QuotientLinks {
    std::vector<LinkId> of;  // link -> the number of its orbit
    std::vector<Link> links;  // orbit number -> its representative's link

    QuotientLinks(const NetworkSymmetry& network, std::span<const Link> all) : of(all.size(), 0) {
        for (LinkId l = 0; l < all.size(); ++l) {
            if (network.link_rep[l] != l) continue;
            of[l] = static_cast<LinkId>(links.size());
            links.push_back(all[l]);
        }
        for (LinkId l = 0; l < all.size(); ++l) of[l] = of[network.link_rep[l]];
    }
};

// Plans of the folded groups on the quotient network, built from the original planner's plans of
// the representative groups (verified before the run).
class QuotientPlanner final : public TransferPlanner {
public:
    QuotientPlanner(const Program& program, const FoldedProgram& folded, const ProgramSymmetry& symmetry,
                    const NetworkSymmetry& network, const QuotientLinks& links, std::vector<TransferRequest> verified,
                    TransferPlanner& planner)
        : program_(program), folded_(folded), symmetry_(symmetry), network_(network), links_(links),
          verified_(std::move(verified)), planner_(planner) {}

    const TransferPlan& plan(const TransferRequest& request) override {
        const TransferRequest q = original(request);
        const auto found = plans_.find(q);
        if (found != plans_.end()) return *found->second;
        if (!std::binary_search(verified_.begin(), verified_.end(), q)) throw FoldBroken();
        auto made = std::make_unique<TransferPlan>(quotient(planner_.plan(q), symmetry_.group_orbit[q.group]));
        return *plans_.emplace(q, std::move(made)).first->second;
    }

private:
    // The request of the representative group: a pair's sender is the group member that the
    // sending folded rank stands for.
    TransferRequest original(const TransferRequest& r) const {
        const std::uint32_t group = folded_.origin[r.group];
        std::uint32_t source = program_.groups[group].ranks.front();
        if (r.kind == OpKind::Send) {
            const auto& members = folded_.groups[r.group].ranks;
            const auto at = std::find(members.begin(), members.end(), r.source);
            if (at == members.end()) throw FoldBroken();
            source = folded_.members[r.group][static_cast<std::size_t>(at - members.begin())];
        }
        return {group, r.kind, r.bytes, source};
    }

    // W_[l](f) = orbit x (sum of f's weights on [l]) / |[l]| (fold.hpp). When every use of f on
    // [l] has the same weight w, W = w x (orbit x uses / |[l]|) with an integer ratio taken first,
    // so that the common case (ratio 1) keeps w to the last bit.
    TransferPlan quotient(const TransferPlan& plan, std::uint32_t orbit) const {
        TransferPlan out;
        for (const TransferPhase& ph : plan.phases) {
            TransferPhase q{ph.latency, {}};
            for (const Flow& f : ph.flows) q.flows.push_back(quotient(f, orbit));
            out.phases.push_back(std::move(q));
        }
        return out;
    }

    Flow quotient(const Flow& f, std::uint32_t orbit) const {
        struct Sum {
            double total = 0.0;
            double first = 0.0;
            std::uint64_t uses = 0;
            bool uniform = true;
        };
        std::map<LinkId, Sum> by_orbit;
        for (const LinkUse& u : f.links) {
            if (!(u.weight > 0.0)) continue;
            Sum& s = by_orbit[network_.link_rep[u.link]];
            if (s.uses == 0) s.first = u.weight;
            s.uniform = s.uniform && u.weight == s.first;
            s.total += u.weight;
            ++s.uses;
        }
        Flow out;
        out.bytes = f.bytes;
        for (const auto& [rep, s] : by_orbit) {
            const std::uint64_t size = network_.link_orbit[rep];
            const std::uint64_t num = std::uint64_t{orbit} * s.uses;
            double w = s.total * static_cast<double>(orbit) / static_cast<double>(size);
            if (s.uniform && num % size == 0) w = s.first * static_cast<double>(num / size);
            out.links.push_back({links_.of[rep], w});
        }
        return out;
    }

    const Program& program_;
    const FoldedProgram& folded_;
    const ProgramSymmetry& symmetry_;
    const NetworkSymmetry& network_;
    const QuotientLinks& links_;
    std::vector<TransferRequest> verified_;  // sorted
    TransferPlanner& planner_;
    std::map<TransferRequest, std::unique_ptr<TransferPlan>> plans_;
};

SimResult unfold(const SimResult& folded, const FoldedProgram& fp, std::size_t ranks) {
    SimResult r = folded;
    r.ranks.resize(ranks);
    for (std::size_t i = 0; i < ranks; ++i) r.ranks[i] = folded.ranks[fp.folded_rank[i]];
    r.folded = true;
    r.fold_factor = static_cast<double>(ranks) / static_cast<double>(fp.reps.size());
    return r;
}

}  // namespace

std::optional<FoldedProgram> fold_program(const Program& program, const ProgramSymmetry& sym) {
    FoldedProgram fp;
    const std::size_t n = program.ranks.size();
    fp.folded_rank.assign(n, kNoGroup);
    for (std::uint32_t r = 0; r < n; ++r) {
        if (sym.rank_rep[r] != r) continue;
        fp.folded_rank[r] = static_cast<std::uint32_t>(fp.reps.size());
        fp.reps.push_back(r);
        fp.keys.push_back(0);
    }
    for (std::uint32_t r = 0; r < n; ++r) {
        fp.folded_rank[r] = fp.folded_rank[sym.rank_rep[r]];
        fp.keys[fp.folded_rank[r]] += rank_key(r);  // modulo 2^64, as the fingerprint sums
    }
    std::vector<std::uint32_t> folded_group(program.groups.size(), kNoGroup);
    for (std::uint32_t G = 0; G < program.groups.size(); ++G) {
        if (sym.group_rep[G] != G) continue;
        folded_group[G] = static_cast<std::uint32_t>(fp.groups.size());
        Group q{{}, program.groups[G].label};
        std::vector<std::uint32_t> members;
        for (const std::uint32_t r : program.groups[G].ranks) {
            const std::uint32_t f = fp.folded_rank[r];
            if (std::find(q.ranks.begin(), q.ranks.end(), f) != q.ranks.end()) continue;
            q.ranks.push_back(f);
            members.push_back(r);
        }
        fp.groups.push_back(std::move(q));
        fp.members.push_back(std::move(members));
        fp.origin.push_back(G);
    }
    for (const std::uint32_t r : fp.reps) {
        RankProgram q{program.ranks[r].op_list, {}};
        const auto& slots = program.ranks[r].groups;
        for (std::size_t k = 0; k < slots.size(); ++k) {
            const std::uint32_t rep = sym.group_rep[slots[k]];
            for (std::size_t j = 0; j < k; ++j) {
                if (slots[j] != slots[k] && sym.group_rep[slots[j]] == rep) return std::nullopt;
            }
            q.groups.push_back(folded_group[rep]);
        }
        fp.ranks.push_back(std::move(q));
    }
    return fp;
}

std::optional<SimResult> simulate_folded(const Program& program, std::span<const OpListIndex> indexes,
                                         std::span<const Link> links, TransferPlanner& planner,
                                         const SimOptions& options) {
    try {
        ProgramSymmetry sym = program_symmetry(program, options.fold_generators);
        if (sym.generators.empty()) return std::nullopt;
        const CommUses uses = communication_uses(indexes);  // for the requests of both analyses
        std::vector<TransferRequest> requests = possible_requests(program, program.ranks, program.groups, uses);
        const NetworkSymmetry net = network_symmetry(program, sym, requests, links, planner);
        if (net.accepted.empty()) return std::nullopt;
        if (net.accepted.size() < sym.generators.size()) {
            // Orbits of the generators that passed both checks only.
            std::vector<RankMap> kept;
            for (const std::size_t i : net.accepted) kept.push_back(sym.generators[i]);
            sym = program_symmetry(program, kept);
        }
        const auto fp = fold_program(program, sym);
        if (!fp || fp->reps.size() == program.ranks.size()) return std::nullopt;
        const QuotientLinks quotient_links(net, links);
        QuotientPlanner quotient(program, *fp, sym, net, quotient_links, std::move(requests), planner);
        const EngineInput input{program, fp->ranks, fp->groups, fp->keys, indexes, &uses};
        Engine engine(input, quotient_links.links, quotient, {}, options);
        return unfold(engine.run(), *fp, program.ranks.size());
    } catch (const std::exception&) {
        return std::nullopt;  // a broken fold, or an error the full simulation will report
    }
}

}  // namespace cuboid::sim
