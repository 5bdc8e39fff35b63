// Symmetry folding (sim/fold.hpp, sim/symmetry.hpp): a folded run gives the full run's results
// exactly, and anything not provably symmetric falls back to the full run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "sim/symmetry.hpp"
#include "sim_test_support.hpp"

namespace cuboid::sim {
namespace {

using test::TestProgram;
namespace stream = test::stream;
namespace comm_class = test::comm_class;
using test::exposed;

// One phase of 2 us latency moving `bytes` as one flow over `uses` (link -> weight).
TransferPlan one_flow_plan(const std::map<LinkId, double>& uses, Bytes bytes) {
    Flow f;
    f.bytes = bytes;
    for (const auto& [l, w] : uses) f.links.push_back({l, w});
    TransferPlan p;
    p.phases.push_back(TransferPhase{microseconds(2.0), {f}});
    return p;
}

// A star network: every GPU has an up and a down link to one switch, and every route between two
// GPUs crosses one shared core link (so concurrent transfers of different replicas contend).
// Plans: a ring (every hop's route, weights summed) for collectives, the route for a pair, or, with
// `rooted`, a star from the group's first rank (not invariant when a generator moves the root).
class StarPlanner final : public TransferPlanner {
public:
    StarPlanner(const Program& program, std::uint32_t gpus, bool rooted = false)
        : program_(program), gpus_(gpus), rooted_(rooted) {
        for (std::uint32_t g = 0; g < gpus; ++g) {
            links.push_back({"up" + std::to_string(g), BytesPerSecond(100e9)});
            links.push_back({"down" + std::to_string(g), BytesPerSecond(100e9)});
        }
        links.push_back({"core", BytesPerSecond(150e9)});
    }
    std::vector<Link> links;

    std::optional<std::vector<LinkId>> route(std::uint32_t a, std::uint32_t b) override {
        if (a == b) return std::vector<LinkId>{};
        return std::vector<LinkId>{2 * a, 2 * gpus_, 2 * b + 1};
    }

    const TransferPlan& plan(const TransferRequest& q) override {
        ++planned;
        std::map<LinkId, double> uses;
        const auto hop = [&](std::uint32_t a, std::uint32_t b) {
            const auto links_ab = route(a, b);  // kept: the loop would outlive a temporary
            for (const LinkId l : *links_ab) uses[l] += 1.0;
        };
        const auto& ranks = program_.groups[q.group].ranks;
        if (q.kind == OpKind::Send) {
            hop(q.source, ranks[0] == q.source ? ranks[1] : ranks[0]);
        } else if (rooted_) {
            for (const std::uint32_t r : ranks) hop(ranks.front(), r);
        } else {
            for (std::size_t i = 0; i < ranks.size(); ++i) hop(ranks[i], ranks[(i + 1) % ranks.size()]);
        }
        return store_.emplace_back(one_flow_plan(uses, q.bytes));
    }
    int planned = 0;

private:
    const Program& program_;
    std::uint32_t gpus_;
    bool rooted_;
    std::deque<TransferPlan> store_;
};

// Two pipeline stages x `replicas` data-parallel replicas, rank = replica + replicas x stage:
// stage 0 computes, sends activations to stage 1, computes, all-reduces gradients with its
// replicas; stage 1 receives, computes, all-reduces. `odd` gives rank 1 a longer compute (a
// program whose replicas differ).
TestProgram two_stage_program(std::uint32_t replicas, bool odd = false) {
    TestProgram t;
    const auto build_stage = [&](bool first, double us) {
        const std::uint32_t l = t.add_list();
        if (first) {
            const auto a = t.compute(l, "fwd", microseconds(us));
            const auto s = t.comm(l, OpKind::Send, "send", 1, Bytes(64e6), stream::kPipelineSend,
                                  comm_class::kPipeline, {a});
            const auto b = t.compute(l, "bwd", microseconds(2 * us), stream::kCompute, OpCategory::Compute, {a});
            t.comm(l, OpKind::AllReduce, "ar", 0, Bytes(256e6), stream::kDataComm, comm_class::kData, {b, s});
        } else {
            const auto r = t.comm(l, OpKind::Recv, "recv", 1, Bytes(64e6), stream::kPipelineRecv,
                                  comm_class::kPipeline);
            const auto b = t.compute(l, "fwdbwd", microseconds(us), stream::kCompute, OpCategory::Compute, {r});
            t.comm(l, OpKind::AllReduce, "ar", 0, Bytes(256e6), stream::kDataComm, comm_class::kData, {b});
        }
        return l;
    };
    const std::uint32_t s0 = build_stage(true, 100.0), s1 = build_stage(false, 150.0);
    const std::uint32_t s0_odd = odd ? build_stage(true, 130.0) : s0;
    std::vector<std::uint32_t> dp0, dp1;
    for (std::uint32_t d = 0; d < replicas; ++d) dp0.push_back(d), dp1.push_back(d + replicas);
    const auto g_dp0 = t.group(dp0, "dp"), g_dp1 = t.group(dp1, "dp");
    std::vector<std::uint32_t> pairs;
    for (std::uint32_t d = 0; d < replicas; ++d) pairs.push_back(t.group({d, d + replicas}, "pp"));
    for (std::uint32_t d = 0; d < replicas; ++d) t.rank(odd && d == 1 ? s0_odd : s0, {g_dp0, pairs[d]});
    for (std::uint32_t d = 0; d < replicas; ++d) t.rank(s1, {g_dp1, pairs[d]});
    return t;
}

// A full mesh: one link per ordered GPU pair, so that every pair's route is its own. Collectives
// run as NCCL's double binary tree does across nodes: one flow over the edges of a binary tree laid
// out as a heap over the group's ranks and of its mirror image, both directions. Counts the routes
// asked, which folding reads to map links.
class MeshTreePlanner final : public TransferPlanner {
public:
    MeshTreePlanner(const Program& program, std::uint32_t gpus) : program_(program), gpus_(gpus) {
        for (std::uint32_t a = 0; a < gpus; ++a)
            for (std::uint32_t b = 0; b < gpus; ++b) links.push_back({std::to_string(a) + ">" + std::to_string(b), BytesPerSecond(50e9)});
    }
    std::vector<Link> links;
    int routes_asked = 0;

    std::optional<std::vector<LinkId>> route(std::uint32_t a, std::uint32_t b) override {
        ++routes_asked;
        if (a == b) return std::vector<LinkId>{};
        return std::vector<LinkId>{a * gpus_ + b};
    }

    const TransferPlan& plan(const TransferRequest& q) override {
        const auto& ranks = program_.groups[q.group].ranks;
        const std::size_t n = ranks.size();
        std::map<LinkId, double> uses;
        for (std::size_t i = 1; i < n; ++i) {
            const std::size_t parent = (i - 1) / 2;
            for (const auto& [a, b] : {std::pair{ranks[i], ranks[parent]}, std::pair{ranks[n - 1 - i], ranks[n - 1 - parent]}}) {
                uses[a * gpus_ + b] += 1.0;
                uses[b * gpus_ + a] += 1.0;
            }
        }
        return store_.emplace_back(one_flow_plan(uses, q.bytes));
    }

private:
    const Program& program_;
    std::uint32_t gpus_;
    std::deque<TransferPlan> store_;
};

// rank(d, s) -> rank(d + by mod D, s)
RankMap replica_shift(std::uint32_t replicas, std::uint32_t by = 1) {
    RankMap g(2 * replicas);
    for (std::uint32_t r = 0; r < g.size(); ++r) g[r] = (r % replicas + by) % replicas + replicas * (r / replicas);
    return g;
}

SimResult run(const TestProgram& t, StarPlanner& planner, std::optional<RankMap> generator) {
    SimOptions options;
    options.fold = generator.has_value();
    if (generator) options.fold_generators.push_back(*generator);
    return simulate(t.program, t.costs, planner.links, planner, {}, options);
}

// A folded run starts fewer flows than the full one; everything else is equal.
void check_same(const SimResult& folded, const SimResult& full) { test::require_same_outcome(folded, full, false); }

}  // namespace

TEST_CASE("a folded run equals the full run and simulates one rank per orbit", "[sim][fold]") {
    const std::uint32_t replicas = 4;
    const TestProgram t = two_stage_program(replicas);
    StarPlanner full_planner(t.program, 2 * replicas), fold_planner(t.program, 2 * replicas);
    const SimResult full = run(t, full_planner, std::nullopt);
    const SimResult folded = run(t, fold_planner, replica_shift(replicas));
    CHECK_FALSE(full.folded);
    REQUIRE(folded.folded);
    // The replica shift has one orbit per stage: 8 ranks run as 2.
    CHECK(folded.fold_factor == 4.0);
    check_same(folded, full);
    CHECK(folded.events < full.events);
    // The pipeline sends of the 4 replicas start together (stage 0 posts at 100 us) and share the
    // core link, 150 GB/s / 4 each (their up and down links, 100 GB/s, do not bind): stage 1 waits
    // 2 us of latency + 64 MB / 37.5 GB/s for its activations. The folded run reproduced that
    // contention with one flow of weight 4 on the core.
    const double send_s = 2e-6 + 64e6 / (150e9 / 4);
    for (std::uint32_t r = replicas; r < 2 * replicas; ++r) {
        CHECK(to_seconds(exposed(folded.ranks[r].breakdown, comm_class::kPipeline)) == Approx(send_s).margin(1e-12));
    }
}

TEST_CASE("a generator that is not a symmetry of the program is rejected", "[sim][fold]") {
    const std::uint32_t replicas = 2;
    const TestProgram t = two_stage_program(replicas);
    // Swapping stages: rank 0 (stage 0) would map onto rank 2 (stage 1), another op list.
    const RankMap swap_stages{2, 3, 0, 1};
    const RankMap not_permutation{0, 0, 2, 3};
    const ProgramSymmetry sym =
        program_symmetry(t.program, std::vector<RankMap>{swap_stages, not_permutation, replica_shift(replicas)});
    // Only the replica shift is kept: orbits {0, 1} (stage 0) and {2, 3} (stage 1).
    CHECK(sym.accepted == std::vector<std::size_t>{2});
    CHECK(sym.rank_rep == std::vector<std::uint32_t>{0, 0, 2, 2});

    StarPlanner full_planner(t.program, 4), fold_planner(t.program, 4);
    const SimResult folded = run(t, fold_planner, swap_stages);
    CHECK_FALSE(folded.folded);
    check_same(folded, run(t, full_planner, std::nullopt));
}

TEST_CASE("replicas that run different programs fall back to the full run", "[sim][fold]") {
    const TestProgram t = two_stage_program(3, /*odd=*/true);
    StarPlanner full_planner(t.program, 6), fold_planner(t.program, 6);
    const SimResult folded = run(t, fold_planner, replica_shift(3));
    CHECK_FALSE(folded.folded);
    CHECK(folded.fold_factor == 1.0);
    check_same(folded, run(t, full_planner, std::nullopt));
}

TEST_CASE("a plan rooted at one rank is not invariant and falls back", "[sim][fold]") {
    const TestProgram t = two_stage_program(3);
    StarPlanner full_planner(t.program, 6, /*rooted=*/true), fold_planner(t.program, 6, /*rooted=*/true);
    const SimResult folded = run(t, fold_planner, replica_shift(3));
    CHECK_FALSE(folded.folded);
    check_same(folded, run(t, full_planner, std::nullopt));
}

TEST_CASE("links of different bandwidth are no symmetry of the network", "[sim][fold]") {
    const TestProgram t = two_stage_program(2);
    StarPlanner full_planner(t.program, 4), fold_planner(t.program, 4);
    // Rank 1's up link is half as fast: the replica shift maps rank 0's up link onto it.
    full_planner.links[2].bandwidth = fold_planner.links[2].bandwidth = BytesPerSecond(50e9);
    const SimResult folded = run(t, fold_planner, replica_shift(2));
    CHECK_FALSE(folded.folded);
    check_same(folded, run(t, full_planner, std::nullopt));
}

TEST_CASE("candidates that fail are dropped and the others still fold", "[sim][fold]") {
    const TestProgram t = two_stage_program(4);
    StarPlanner full_planner(t.program, 8), fold_planner(t.program, 8);
    // Replicas 1 and 3 of stage 0 have slower up links (links 2 r): the shift by one replica maps
    // a fast link onto a slow one and fails; the shift by two maps 0 <-> 2 and 1 <-> 3 and passes.
    for (StarPlanner* p : {&full_planner, &fold_planner}) p->links[2].bandwidth = p->links[6].bandwidth = BytesPerSecond(50e9);
    SimOptions options;
    options.fold = true;
    options.fold_generators = {replica_shift(4, 1), replica_shift(4, 2)};
    const SimResult folded = simulate(t.program, t.costs, fold_planner.links, fold_planner, {}, options);
    REQUIRE(folded.folded);
    CHECK(folded.fold_factor == 2.0);  // orbits {0, 2}, {1, 3}, {4, 6}, {5, 7}
    check_same(folded, run(t, full_planner, std::nullopt));
}

// The network proof takes requests of larger groups first (a failing candidate then fails early);
// which candidates pass and the orbits of the links the plans use must not depend on that order.
TEST_CASE("the network proof's outcome does not depend on the order of the requests", "[sim][fold]") {
    const TestProgram t = two_stage_program(4);
    const ProgramSymmetry sym =
        program_symmetry(t.program, std::vector<RankMap>{replica_shift(4, 1), replica_shift(4, 2)});
    REQUIRE(sym.generators.size() == 2);
    const std::vector<TransferRequest> requests = possible_requests(t.program);
    REQUIRE(requests.size() > 2);
    std::vector<std::vector<TransferRequest>> orders{requests, {requests.rbegin(), requests.rend()}};
    // Every request's plan once more, in a third order: a rotation.
    orders.push_back(requests);
    std::rotate(orders.back().begin(), orders.back().begin() + 1, orders.back().end());
    // Slower up links for replicas 1 and 3 of stage 0 (as above): the shift by one fails.
    for (const bool slow : {false, true}) {
        INFO("slow links " << slow);
        std::vector<NetworkSymmetry> nets;
        for (const auto& order : orders) {
            StarPlanner planner(t.program, 8);
            if (slow) planner.links[2].bandwidth = planner.links[6].bandwidth = BytesPerSecond(50e9);
            nets.push_back(network_symmetry(t.program, sym, order, planner.links, planner));
        }
        CHECK(nets.front().accepted == (slow ? std::vector<std::size_t>{1} : std::vector<std::size_t>{0, 1}));
        StarPlanner planner(t.program, 8);
        for (std::size_t k = 1; k < nets.size(); ++k) {
            INFO("order " << k);
            CHECK(nets[k].accepted == nets.front().accepted);
            for (const TransferRequest& q : requests) {
                for (const TransferPhase& ph : planner.plan(q).phases) {
                    for (const Flow& f : ph.flows) {
                        for (const LinkUse& u : f.links) {
                            CHECK(nets[k].link_rep[u.link] == nets.front().link_rep[u.link]);
                            CHECK(nets[k].link_orbit[u.link] == nets.front().link_orbit[u.link]);
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("folding is skipped with observers, which want every rank", "[sim][fold]") {
    const TestProgram t = two_stage_program(2);
    StarPlanner planner(t.program, 4);
    test::Recorder recorder;
    SimObserver* observers[] = {&recorder};
    SimOptions options;
    options.fold = true;
    options.fold_generators.push_back(replica_shift(2));
    const SimResult r = simulate(t.program, t.costs, planner.links, planner, observers, options);
    CHECK_FALSE(r.folded);
    CHECK(recorder.at(3, 0).finished >= Time(0));  // rank 3 (stage 1, replica 1) was simulated
}

}  // namespace cuboid::sim

namespace cuboid::sim {

namespace stream = test::stream;
namespace comm_class = test::comm_class;

// Two copies (tensor coordinates) of `replicas` data-parallel ranks, rank = copy x replicas +
// replica; each rank computes and all-reduces with its copy's replicas. Swapping the copies is a symmetry; the tree plans cross
// links that no ring neighbours' routes do, which folding must still map, without matching every
// pair of a group.
TEST_CASE("tree plans fold by matching the tree's pairs, not every pair of the group", "[sim][fold]") {
    const std::uint32_t replicas = 32;
    TestProgram t;
    const std::uint32_t l = t.add_list();
    const auto c = t.compute(l, "bwd", microseconds(100.0));
    t.comm(l, OpKind::AllReduce, "ar", 0, Bytes(64e6), stream::kDataComm, comm_class::kData, {c});
    std::vector<std::uint32_t> dp0, dp1;
    for (std::uint32_t d = 0; d < replicas; ++d) dp0.push_back(d), dp1.push_back(d + replicas);
    const auto g0 = t.group(dp0, "dp"), g1 = t.group(dp1, "dp");
    for (std::uint32_t d = 0; d < replicas; ++d) t.rank(l, {g0});
    for (std::uint32_t d = 0; d < replicas; ++d) t.rank(l, {g1});
    RankMap swap_copies(2 * replicas);
    for (std::uint32_t r = 0; r < 2 * replicas; ++r) swap_copies[r] = (r + replicas) % (2 * replicas);

    MeshTreePlanner full_planner(t.program, 2 * replicas), fold_planner(t.program, 2 * replicas);
    const SimResult full = simulate(t.program, t.costs, full_planner.links, full_planner);
    SimOptions options;
    options.fold = true;
    options.fold_generators.push_back(swap_copies);
    const SimResult folded = simulate(t.program, t.costs, fold_planner.links, fold_planner, {}, options);
    REQUIRE(folded.folded);
    CHECK(folded.fold_factor == 2.0);
    test::require_same_outcome(folded, full, false);
    // For each group's plan, ring neighbours (2 x 32 pairs) and the two trees' edges (4 x 31),
    // two routes each (a pair and its image): 752 at most, where matching every ordered pair
    // asks about 4,000.
    CHECK(fold_planner.routes_asked <= 2 * 2 * (2 * 32 + 4 * 31));
}

}  // namespace cuboid::sim
