#include <catch2/catch.hpp>

#include <cmath>
#include <deque>
#include <iterator>
#include <map>
#include <random>
#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/flow_network.hpp"

using namespace cuboid;
using namespace cuboid::sim;

namespace {

constexpr double kPsPerSecond = 1e12;

struct Due {
    FlowId flow;
    std::uint32_t version;
};

// Drives a network like the executor does: schedules announced completions, skips void ones.
class Driver {
public:
    explicit Driver(std::span<const Link> links) : net(links) {}

    // The network keeps a view of `uses` while the flow runs (as of a planner's cached plan).
    FlowId start(std::vector<LinkUse> uses, double bytes, Time now = Time(0)) {
        kept.push_back(std::move(uses));
        const FlowId id = net.start(kept.back(), Bytes(bytes), now, 0);
        take();
        return id;
    }
    // Runs to the end as the executor does: the flows due at one time end() one by one, then one
    // settle() before the clock moves on.
    std::map<FlowId, Time> run_settling() {
        std::map<FlowId, Time> done;
        while (!queue.empty() || net.unsettled()) {
            if (net.unsettled() && (queue.empty() || queue.top().time != now_)) {
                net.settle(now_);
                take();
                continue;
            }
            const auto e = queue.pop();
            now_ = e.time;
            if (!net.current(e.payload.flow, e.payload.version)) continue;
            net.end(e.payload.flow, e.time);
            done[e.payload.flow] = e.time;
        }
        return done;
    }
    // Runs until `stop` (exclusive) or until no flow is left; returns finish times by flow id.
    std::map<FlowId, Time> run(Time stop = kTimeNever) {
        std::map<FlowId, Time> done;
        while (!queue.empty() && queue.top().time < stop) {
            const auto e = queue.pop();
            if (!net.current(e.payload.flow, e.payload.version)) continue;
            net.finish(e.payload.flow, e.time);
            done[e.payload.flow] = e.time;
            take();
        }
        return done;
    }

    FlowNetwork net;
    EventQueue<Due> queue;
    std::deque<std::vector<LinkUse>> kept;

private:
    Time now_{0};
    void take() {
        for (const auto& c : net.completions()) queue.push(c.time, Due{c.flow, c.version});
        net.completions().clear();
    }
};

Time after_seconds(double s) { return Time(static_cast<std::int64_t>(std::ceil(s * kPsPerSecond))); }

}  // namespace

TEST_CASE("two flows on one link each get half of it", "[sim][flow_network]") {
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}};
    Driver d(links);
    const FlowId a = d.start({{0, 1.0}}, 1e6);
    const FlowId b = d.start({{0, 1.0}}, 1e6);
    // Equal shares: r = C/2 = 0.5e9 B/s each.
    CHECK(d.net.rate(a).value == Approx(0.5e9));
    CHECK(d.net.rate(b).value == Approx(0.5e9));
    const auto done = d.run();
    // Each moves 1e6 B at 0.5e9 B/s: 2e-3 s.
    CHECK(done.at(a) == after_seconds(1e6 / 0.5e9));
    CHECK(done.at(b) == after_seconds(1e6 / 0.5e9));
}

TEST_CASE("max-min fairness equalises rates, not link consumption", "[sim][flow_network]") {
    const std::vector<Link> links{{"l", gigabytes_per_second(3.0)}};
    Driver d(links);
    const FlowId twice = d.start({{0, 2.0}}, 1e6);  // crosses the link twice (weight 2)
    const FlowId once = d.start({{0, 1.0}}, 1e6);
    // Equal rates r with 2r + r = C = 3e9 B/s: r = 1e9 B/s; the link is then full.
    CHECK(d.net.rate(twice).value == Approx(1e9));
    CHECK(d.net.rate(once).value == Approx(1e9));
    CHECK(2.0 * d.net.rate(twice).value + d.net.rate(once).value == Approx(3e9));
}

TEST_CASE("water-filling over three flows and two links", "[sim][flow_network]") {
    // Link 0: 10 GB/s carries A and B; link 1: 4 GB/s carries A and C.
    const std::vector<Link> links{{"l0", gigabytes_per_second(10.0)}, {"l1", gigabytes_per_second(4.0)}};
    Driver d(links);
    const FlowId a = d.start({{0, 1.0}, {1, 1.0}}, 1e9);
    const FlowId b = d.start({{0, 1.0}}, 1e9);
    const FlowId c = d.start({{1, 1.0}}, 1e9);
    // Fill levels: link 1 saturates first at 4/2 = 2 GB/s (link 0 would allow 10/2 = 5): A and C
    // freeze at 2. Link 0 has 10 - 2 = 8 GB/s left for B alone: B = 8 GB/s.
    CHECK(d.net.rate(a).value == Approx(2e9));
    CHECK(d.net.rate(c).value == Approx(2e9));
    CHECK(d.net.rate(b).value == Approx(8e9));
}

TEST_CASE("water-filling in three rounds beside a long flow that freezes first", "[sim][flow_network]") {
    // A crosses ten links (a data-parallel ring, say), the first of 1 GB/s; the others are
    // 10 GB/s, but for link 10 (6 GB/s). B is on link 5 with A and C; C also on link 10 with D.
    // Round 1: level min(1/1, 10/3, 6/2) = 1, A freezes on link 0 and its other nine links leave
    // the filling. Round 2: link 5 offers (10 - 1)/2 = 4.5, link 10 6/2 = 3: C and D freeze at 3.
    // Round 3: link 5 has 10 - 1 - 3 = 6 GB/s left for B alone.
    std::vector<Link> links;
    for (int i = 0; i < 11; ++i) {
        const double gbps = i == 0 ? 1.0 : i == 10 ? 6.0 : 10.0;
        links.push_back({std::to_string(i), gigabytes_per_second(gbps)});
    }
    Driver d(links);
    std::vector<LinkUse> ring;
    for (LinkId l = 0; l < 10; ++l) ring.push_back({l, 1.0});
    const FlowId a = d.start(ring, 1e9);
    const FlowId b = d.start({{5, 1.0}}, 1e9);
    const FlowId c = d.start({{5, 1.0}, {10, 1.0}}, 1e9);
    const FlowId e = d.start({{10, 1.0}}, 1e9);
    CHECK(d.net.rate(a).value == Approx(1e9));
    CHECK(d.net.rate(c).value == Approx(3e9));
    CHECK(d.net.rate(e).value == Approx(3e9));
    CHECK(d.net.rate(b).value == Approx(6e9));
    // C and D end first (1 GB at 3 GB/s); B then has 9 GB/s for the rest.
    const auto done = d.run();
    CHECK(done.at(c) == done.at(e));
    CHECK(done.at(b) < done.at(a));
}

TEST_CASE("a flow that ends early leaves its share to the others", "[sim][flow_network]") {
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}};
    Driver d(links);
    const FlowId small = d.start({{0, 1.0}}, 1e6);
    const FlowId big = d.start({{0, 1.0}}, 3e6);
    const auto done = d.run();
    // Both at 0.5e9 B/s: the small flow ends at 1e6 / 0.5e9 = 2 ms, when the big one has moved 1e6
    // B; its last 2e6 B then run at the full 1e9 B/s: 2 ms more, 4 ms in all.
    CHECK(done.at(small) == after_seconds(2e-3));
    CHECK(done.at(big) == after_seconds(4e-3));
}

TEST_CASE("a flow that joins later slows the running one down", "[sim][flow_network]") {
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}};
    Driver d(links);
    const FlowId first = d.start({{0, 1.0}}, 2e6);
    d.run(after_seconds(1e-3));  // 1 ms alone at 1e9 B/s: 1e6 B moved, 1e6 B left
    const FlowId second = d.start({{0, 1.0}}, 0.5e6, after_seconds(1e-3));
    const auto done = d.run();
    // From 1 ms both run at 0.5e9 B/s: the second (0.5e6 B) ends at 1 ms + 1 ms = 2 ms; the first
    // has 0.5e6 B left then, at 1e9 B/s: 0.5 ms more, 2.5 ms.
    CHECK(done.at(second) == after_seconds(2e-3));
    CHECK(done.at(first) == after_seconds(2.5e-3));
}

TEST_CASE("links carry weight x bytes of every flow over them", "[sim][flow_network]") {
    const std::vector<Link> links{{"l0", gigabytes_per_second(10.0)}, {"l1", gigabytes_per_second(4.0)}};
    Driver d(links);
    d.start({{0, 2.0}, {1, 1.0}}, 3e6);
    d.start({{0, 1.0}}, 5e6);
    d.start({{1, 3.0}}, 7e6);
    d.run();
    CHECK(d.net.active_flows() == 0);
    // Link 0: 2 x 3e6 + 1 x 5e6 = 11e6 B. Link 1: 1 x 3e6 + 3 x 7e6 = 24e6 B.
    CHECK(d.net.carried(0).value == Approx(11e6).epsilon(1e-12));
    CHECK(d.net.carried(1).value == Approx(24e6).epsilon(1e-12));
}

TEST_CASE("a link's carried bytes count running flows up to their last re-share", "[sim][flow_network]") {
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}, {"m", gigabytes_per_second(1.0)}};
    Driver d(links);
    d.start({{0, 2.0}, {1, 1.0}}, 2e6);
    d.run(after_seconds(1e-3));
    CHECK(d.net.carried(0).value == 0.0);  // not re-shared since it started
    // The second flow's start re-shares the first, which has moved 1 ms x 0.5e9 B/s (weight 2 on
    // a 1e9 B/s link) = 0.5e6 B: 1e6 B on link 0, 0.5e6 B on link 1.
    d.start({{0, 1.0}}, 1e6, after_seconds(1e-3));
    CHECK(d.net.carried(0).value == Approx(1e6).epsilon(1e-12));
    CHECK(d.net.carried(1).value == Approx(0.5e6).epsilon(1e-12));
    d.run();
    CHECK(d.net.carried(0).value == Approx(2 * 2e6 + 1e6).epsilon(1e-12));
    CHECK(d.net.carried(1).value == Approx(2e6).epsilon(1e-12));
}

TEST_CASE("a start re-shares only the flows connected to it", "[sim][flow_network]") {
    const std::vector<Link> links{{"x", gigabytes_per_second(1.0)}, {"y", gigabytes_per_second(1.0)}};
    Driver d(links);
    d.start({{0, 1.0}}, 1e6);
    REQUIRE(d.net.completions().empty());  // taken by the driver
    const std::vector<LinkUse> y{{1, 1.0}};
    const FlowId b = d.net.start(y, Bytes(1e6), Time(0), 0);
    // The flow on link x shares nothing with it: only the new flow is announced.
    REQUIRE(d.net.completions().size() == 1);
    CHECK(d.net.completions().front().flow == b);
}

TEST_CASE("flows added or ended together and settled once end exactly as one by one", "[sim][flow_network]") {
    // Four GPUs, each with an uplink and a downlink of its own and all through one switch link of
    // less capacity: an all-to-all of 12 flows (with one older flow on the switch and one on a
    // separate link, already running) and a lone flow on a link of its own. Some flows bottleneck
    // on the switch, some on their GPU's links; sizes differ so that they end at different times.
    std::vector<Link> links;
    for (int g = 0; g < 4; ++g) {
        links.push_back({"up" + std::to_string(g), gigabytes_per_second(1.0 + 0.25 * g)});
        links.push_back({"down" + std::to_string(g), gigabytes_per_second(2.0 - 0.25 * g)});
    }
    links.push_back({"switch", gigabytes_per_second(3.0)});
    links.push_back({"other", gigabytes_per_second(1.0)});
    links.push_back({"alone", gigabytes_per_second(1.0)});
    const LinkId kSwitch = 8, kOther = 9, kAlone = 10;
    std::vector<std::vector<LinkUse>> a2a;
    for (LinkId from = 0; from < 4; ++from)
        for (LinkId to = 0; to < 4; ++to)
            if (from != to) a2a.push_back({{2 * from, 1.0}, {kSwitch, 1.0}, {2 * to + 1, 1.0}});
    const auto bytes = [](std::size_t i) { return 1e6 * static_cast<double>(1 + i % 5); };

    const auto drive = [&](bool together, bool end_together = false) {
        Driver d(links);
        const FlowId old_switch = d.start({{kSwitch, 1.0}}, 4e6);
        const FlowId old_other = d.start({{kOther, 1.0}}, 2e6);
        d.run(Time(1'000'000'000));  // 1 ms: the old flows have moved part of their bytes
        const Time now(1'000'000'000);
        std::vector<FlowId> ids;
        for (std::size_t i = 0; i < a2a.size(); ++i) {
            d.kept.push_back(a2a[i]);
            ids.push_back(together ? d.net.add(d.kept.back(), Bytes(bytes(i)), now, 0)
                                   : d.net.start(d.kept.back(), Bytes(bytes(i)), now, 0));
        }
        d.kept.push_back({{kAlone, 1.0}});
        ids.push_back(together ? d.net.add(d.kept.back(), Bytes(3e6), now, 0)
                               : d.net.start(d.kept.back(), Bytes(3e6), now, 0));
        if (together) d.net.settle(now);
        for (const auto& c : d.net.completions()) d.queue.push(c.time, Due{c.flow, c.version});
        d.net.completions().clear();
        std::map<FlowId, Time> done = end_together ? d.run_settling() : d.run();
        std::vector<std::int64_t> ends{done.at(old_switch).value, done.at(old_other).value};
        for (const FlowId id : ids) ends.push_back(done.at(id).value);
        return ends;
    };
    const std::vector<std::int64_t> one_by_one = drive(false), together = drive(true);
    CHECK(together == one_by_one);
    // Flows that end at one time, re-shared once (end(), then settle()), as the executor runs them.
    CHECK(drive(true, true) == one_by_one);
    // The all-to-all's flows do not all end at once: the test compares more than one re-share.
    const std::set<std::int64_t> end_times(one_by_one.begin() + 2, one_by_one.end() - 1);
    CHECK(end_times.size() > 3);
    CHECK(end_times.size() < a2a.size());  // and some end at the same time: settled together
}

TEST_CASE("sixteen flows of weight w share a link to the bit as four flows of weight 4 w", "[sim][flow_network]") {
    // A folded run (fold.hpp) carries the four images of a flow as one quotient flow of their
    // summed weight: 16 data-parallel flows on a NIC link of the full network are 4 flows of
    // weight 4 w on its quotient, and both must give the same rates and completions to the
    // picosecond (so the same fingerprint). The weight and capacity are those of a NIC link of
    // scenarios/papers/merak/gpt-8.3b.yaml, where 16 additions of w came to one unit in the last
    // place below 16 w and a completion moved by a picosecond.
    const double w = 0x1.10572620ae4c4p+0;
    const std::vector<Link> links{{"nic", BytesPerSecond(0x1.74876e8p+34)}};
    const auto drive = [&](int flows, double weight) {
        Driver d(links);
        std::vector<FlowId> ids;
        for (int i = 0; i < flows; ++i) ids.push_back(d.start({{0, weight}}, 0x1.b05dp+25));
        std::vector<double> rates;
        for (const FlowId id : ids) rates.push_back(d.net.rate(id).value);
        const auto done = d.run();
        return std::pair{rates, done.at(ids.front())};
    };
    const auto [full_rates, full_end] = drive(16, w);
    const auto [quotient_rates, quotient_end] = drive(4, 4.0 * w);
    const double fair = 0x1.74876e8p+34 / (16.0 * w);  // 16 w is exact: w times a power of two
    for (const double r : full_rates) CHECK(r == fair);
    for (const double r : quotient_rates) CHECK(r == fair);
    CHECK(full_end == quotient_end);
}

TEST_CASE("a flow without links is done at once", "[sim][flow_network]") {
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}};
    FlowNetwork net(links);
    CHECK(net.start({}, Bytes(1e6), Time(0), 0) == kNoFlow);
    const std::vector<LinkUse> unweighted{{0, 0.0}};
    CHECK(net.start(unweighted, Bytes(1e6), Time(0), 0) == kNoFlow);
    const std::vector<LinkUse> used{{0, 1.0}};
    CHECK(net.start(used, Bytes(0.0), Time(0), 0) == kNoFlow);  // nothing to carry
    CHECK(net.completions().empty());
}

TEST_CASE("a flow listing one link twice shares it with itself, and its end leaves the others as they were",
          "[sim][flow_network]") {
    const std::vector<Link> links{{"a", gigabytes_per_second(1.0)}, {"b", gigabytes_per_second(1.0)}};
    Driver d(links);
    const FlowId doubled = d.start({{0, 1.0}, {0, 1.0}}, 1e6);  // two uses of link a, weight 1 each
    const FlowId other = d.start({{1, 1.0}}, 3e6);              // alone on link b
    // Link a carries 2 x rate of the doubled flow: 0.5e9 B/s, so 1e6 B take 2 ms. The other flow
    // has link b to itself: 1e9 B/s, 3 ms, whatever the doubled flow does.
    CHECK(d.net.rate(doubled).value == Approx(0.5e9));
    const auto done = d.run();
    CHECK(done.at(doubled) == after_seconds(2e-3));
    CHECK(done.at(other) == after_seconds(3e-3));
    CHECK(d.net.active_flows() == 0);
}

namespace {

// Max-min fair rates of `flows` (link uses each) by progressive filling, written plainly for the
// tests: the reference the network's rates must match after every start and end.
std::vector<double> max_min_rates(const std::vector<Link>& links, const std::vector<std::vector<LinkUse>>& flows) {
    std::vector<double> rate(flows.size(), 0.0), free(links.size());
    std::vector<bool> frozen(flows.size(), false);
    for (std::size_t l = 0; l < links.size(); ++l) free[l] = links[l].bandwidth.value;
    double level = 0.0;
    for (std::size_t left = flows.size(); left > 0;) {
        // The next level at which some link fills, given the rising flows' weights.
        double next = std::numeric_limits<double>::infinity();
        for (std::size_t l = 0; l < links.size(); ++l) {
            double rising = 0.0;
            for (std::size_t f = 0; f < flows.size(); ++f)
                for (const LinkUse& u : flows[f])
                    if (!frozen[f] && u.link == l) rising += u.weight;
            if (rising > 0.0) next = std::min(next, level + free[l] / rising);
        }
        for (std::size_t l = 0; l < links.size(); ++l) {
            double rising = 0.0;
            for (std::size_t f = 0; f < flows.size(); ++f)
                for (const LinkUse& u : flows[f])
                    if (!frozen[f] && u.link == l) rising += u.weight;
            free[l] -= rising * (next - level);
        }
        level = next;
        for (std::size_t f = 0; f < flows.size(); ++f) {
            if (frozen[f]) continue;
            const bool full = std::any_of(flows[f].begin(), flows[f].end(), [&](const LinkUse& u) {
                return free[u.link] <= 1e-9 * links[u.link].bandwidth.value;
            });
            if (!full) continue;
            frozen[f] = true;
            rate[f] = level;
            --left;
        }
    }
    return rate;
}

}  // namespace

TEST_CASE("a start or end that changes no other rate is settled on the flow's own links", "[sim][flow_network]") {
    // A long flow over 40 fast links and one slow one (a data-parallel tree limited by its NIC),
    // then short flows on single fast links it crosses (tensor-parallel transfers beside it).
    std::vector<Link> links;
    for (int i = 0; i < 40; ++i) links.push_back({"fast" + std::to_string(i), gigabytes_per_second(900.0)});
    links.push_back({"nic", gigabytes_per_second(50.0)});
    std::vector<LinkUse> tree;
    for (LinkId l = 0; l <= 40; ++l) tree.push_back({l, 1.0});
    Driver d(links);
    const FlowId long_flow = d.start(tree, 1e9);
    CHECK(d.net.rate(long_flow).value == 50e9);
    const std::vector<LinkUse> on_fast{{7, 1.0}};
    const FlowId short_flow = d.net.start(on_fast, Bytes(1e6), Time(0), 0);
    // The short flow takes what the long one leaves and is the only one announced: the long flow
    // keeps its rate and its completion.
    REQUIRE(d.net.completions().size() == 1);
    CHECK(d.net.completions().front().flow == short_flow);
    CHECK(d.net.rate(short_flow).value == 850e9);
    CHECK(d.net.rate(long_flow).value == 50e9);
    d.net.completions().clear();
    // Ending it first changes nothing either.
    d.net.finish(short_flow, Time(1'000'000));
    CHECK(d.net.completions().empty());
    CHECK(d.net.rate(long_flow).value == 50e9);
    // A flow that would take less than the long one's rate on a link they share does change it.
    const std::vector<Link> narrow_links{{"narrow", gigabytes_per_second(60.0)}, {"nic", gigabytes_per_second(50.0)}};
    Driver n(narrow_links);
    const FlowId limited = n.start({{0, 1.0}, {1, 1.0}}, 1e9);
    n.kept.push_back({{0, 1.0}});
    const FlowId joining = n.net.start(n.kept.back(), Bytes(1e6), Time(0), 0);
    CHECK(n.net.rate(limited).value == Approx(30e9));
    CHECK(n.net.rate(joining).value == Approx(30e9));
    CHECK(n.net.completions().size() == 2);
}

TEST_CASE("rates stay max-min fair through random starts and ends, settled locally or not", "[sim][flow_network]") {
    // Random flows over a few links of different capacities, some crossing a link twice or with
    // weight 2; after every start, settle and end each flow's rate must be the reference's.
    std::mt19937 rng(20261129);
    std::vector<Link> links;
    for (int i = 0; i < 6; ++i) links.push_back({"l" + std::to_string(i), gigabytes_per_second(10.0 * (1 + i % 3))});
    std::uniform_int_distribution<int> link_of(0, 5), size_of(1, 4), coin(0, 3);
    for (int round = 0; round < 40; ++round) {
        Driver d(links);
        std::map<FlowId, std::vector<LinkUse>> running;
        const auto check_rates = [&] {
            std::vector<std::vector<LinkUse>> flows;
            std::vector<FlowId> ids;
            for (const auto& [id, uses] : running) {
                flows.push_back(uses);
                ids.push_back(id);
            }
            const std::vector<double> expected = max_min_rates(links, flows);
            for (std::size_t i = 0; i < ids.size(); ++i) CHECK(d.net.rate(ids[i]).value == Approx(expected[i]).epsilon(1e-9));
        };
        for (int step = 0; step < 12; ++step) {
            if (running.size() >= 2 && coin(rng) == 0) {  // two end at one instant, settled once
                const FlowId first = running.begin()->first, second = std::next(running.begin())->first;
                d.net.end(second, Time(0));
                d.net.end(first, Time(0));
                d.net.settle(Time(0));
                running.erase(first);
                running.erase(second);
            } else if (!running.empty() && coin(rng) == 0) {  // end one early, as a finished transfer
                const FlowId id = running.begin()->first;
                d.net.finish(id, Time(0));
                running.erase(id);
            } else {
                std::vector<LinkUse> uses;
                for (int k = size_of(rng); k > 0; --k) uses.push_back({static_cast<LinkId>(link_of(rng)), coin(rng) == 0 ? 2.0 : 1.0});
                d.kept.push_back(uses);
                const bool batch = coin(rng) == 0;
                const FlowId id = batch ? d.net.add(d.kept.back(), Bytes(1e9), Time(0), 0)
                                        : d.net.start(d.kept.back(), Bytes(1e9), Time(0), 0);
                if (batch) d.net.settle(Time(0));
                running[id] = uses;
            }
            d.net.completions().clear();
            check_rates();
        }
    }
}
