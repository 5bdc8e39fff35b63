// Max-min fair sharing of flow_network.hpp.
#include "sim/flow_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

#include "sim/time_overflow.hpp"

namespace cuboid::sim {
namespace {

constexpr double kSecondsPerTick = 1e-12;
// Bytes below which a flow counts as delivered: 1e-6 B absolute, and 1e-12 of the flow for big
// ones, because rate x elapsed carries a relative double rounding error of a few 1e-16 per update.
constexpr double kDoneBytes = 1e-6;
constexpr double kDoneFraction = 1e-12;
// Links whose fair level lies within this relative distance of the bottleneck saturate together
// (ties computed along different paths differ in the last bits).
constexpr double kTieFraction = 1e-12;
// A start or an end is settled on the flow's own links only when every comparison that proves it
// changes no other rate holds by this relative margin, far beyond kTieFraction and rounding: the
// full re-share would then find the same bottlenecks.
constexpr double kLocalMargin = 1e-9;

// s + c += x, compensated (Knuth's TwoSum: the rounding error of s + x, exactly, without a branch):
// c collects the errors, so that s + c is the exact sum rounded once in all but contrived cases. Link
// weights are sums of many flows' weights, and a folded run's quotient (fold.hpp) sums fewer,
// larger ones for the same link: 16 flows of weight w add up to a double one unit in the last
// place below 16 w, which four quotient flows of weight 4 w give exactly, and the rates (and a
// completion, by a picosecond) then differ between the folded and the full run.
void add_compensated(double& s, double& c, double x) {
    const double t = s + x;
    const double x_part = t - s;
    c += (s - (t - x_part)) + (x - x_part);
    s = t;
}

// Picoseconds to deliver `remaining` bytes at `rate`, rounded up: a flow must not be declared done
// before its last byte has moved. Zero when what is left counts as delivered.
std::int64_t ticks_to_deliver(double remaining, double done_below, double rate) {
    if (!(remaining > done_below)) return 0;
    return checked_ticks(std::ceil(remaining / rate / kSecondsPerTick));
}

// The least of `values` (NaNs ignored, as std::min ignores them). Four running minima instead of one
// break the chain of dependent comparisons, the most of a water-filling round over a large
// component; the least of a set of numbers does not depend on the order they are compared in.
double lowest(std::span<const double> values) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    double m0 = inf, m1 = inf, m2 = inf, m3 = inf;
    std::size_t i = 0;
    for (; i + 4 <= values.size(); i += 4) {
        m0 = std::min(m0, values[i]);
        m1 = std::min(m1, values[i + 1]);
        m2 = std::min(m2, values[i + 2]);
        m3 = std::min(m3, values[i + 3]);
    }
    for (; i < values.size(); ++i) m0 = std::min(m0, values[i]);
    return std::min(std::min(m0, m1), std::min(m2, m3));
}

}  // namespace

FlowNetwork::FlowNetwork(std::span<const Link> links) : links_(links.size()), carried_(links.size(), 0.0) {
    for (std::size_t i = 0; i < links.size(); ++i) {
        if (!(links[i].bandwidth.value > 0.0)) {
            throw std::logic_error("flow network: link '" + links[i].name + "' has no bandwidth");
        }
        links_[i].capacity = links[i].bandwidth.value;
    }
}

bool FlowNetwork::waits(std::span<const LinkUse> uses, Bytes bytes) {
    const bool loads_a_link = std::any_of(uses.begin(), uses.end(), [](const LinkUse& u) { return u.weight > 0.0; });
    return loads_a_link && !(bytes.value <= kDoneBytes);
}

std::optional<Time> FlowNetwork::solo_duration(std::span<const LinkUse> uses, Bytes bytes) const {
    for (const LinkUse& u : uses) {
        if (u.link >= links_.size()) throw std::logic_error("flow network: flow uses an unknown link");
    }
    if (!waits(uses, bytes)) return Time(0);
    double level = std::numeric_limits<double>::infinity();  // as attach() computes `solo`
    std::vector<LinkId> loaded;  // sorted below to find a link used twice: a ring crosses thousands
    loaded.reserve(uses.size());
    for (const LinkUse& u : uses) {
        if (!(u.weight > 0.0)) continue;
        loaded.push_back(u.link);
        level = std::min(level, links_[u.link].capacity / u.weight);
    }
    std::sort(loaded.begin(), loaded.end());
    if (std::adjacent_find(loaded.begin(), loaded.end()) != loaded.end()) return std::nullopt;
    // As start() sets remaining and done_below and announce() rounds.
    return Time(ticks_to_deliver(bytes.value, std::max(kDoneBytes, kDoneFraction * bytes.value), level));
}

// A new flow on its links, not yet shared: `alone` when no other flow (nor another use of it) is
// on them, `solo` its rate then.
FlowId FlowNetwork::attach_new(std::span<const LinkUse> uses, Bytes bytes, Time now, std::uint32_t owner,
                               double& solo, bool& alone) {
    for (const LinkUse& u : uses) {
        if (u.link >= links_.size()) throw std::logic_error("flow network: flow uses an unknown link");
        // attach() reads every link next: start the (mostly missing) lines loading together.
        prefetch_link(u.link);
    }
    if (!waits(uses, bytes)) return kNoFlow;

    const FlowId id = allocate();
    FlowState& f = flows_[id];
    f.uses = uses.data();
    f.use_count = static_cast<std::uint32_t>(uses.size());
    f.owner = owner;
    f.active = true;
    f.is_new = true;
    f.bytes = bytes.value;
    f.remaining = bytes.value;
    f.done_below = std::max(kDoneBytes, kDoneFraction * bytes.value);
    f.rate = 0.0;
    f.last = now.value;
    ++active_;
    alone = attach(id, solo);
    return id;
}

FlowId FlowNetwork::start(std::span<const LinkUse> uses, Bytes bytes, Time now, std::uint32_t owner) {
    double solo = 0.0;
    bool alone = false;
    const FlowId id = attach_new(uses, bytes, now, owner, solo, alone);
    if (id == kNoFlow) return kNoFlow;
    if (alone) {
        // Alone on all its links (a tensor-parallel ring inside its node, typically): its
        // component is itself, and water-filling gives it the tightest link, capacity / weight.
        flows_[id].rate = solo;
        flows_[id].is_new = false;
        announce(id, now.value);
    } else if (double rate = 0.0; !unsettled() && settles_alone(id, rate)) {
        flows_[id].rate = rate;
        flows_[id].is_new = false;
        announce(id, now.value);
    } else {
        reshare(id, {}, now.value);
    }
    return id;
}

FlowId FlowNetwork::add(std::span<const LinkUse> uses, Bytes bytes, Time now, std::uint32_t owner) {
    double solo = 0.0;
    bool alone = false;
    const FlowId id = attach_new(uses, bytes, now, owner, solo, alone);
    if (id != kNoFlow) added_.push_back(id);
    return id;
}

// The flows added last first: the first one met of each component is the one whose one-by-one
// start would have re-shared the whole component last; the others it reaches are settled with it.
void FlowNetwork::settle(Time now) {
    const std::uint32_t before = epoch_;
    // Searched by this settle: marked after `before` (unsigned differences: the epoch may wrap).
    const auto searched = [&](std::uint32_t mark) { return mark - before - 1U < epoch_ - before; };
    for (auto it = ended_.rbegin(); it != ended_.rend(); ++it) {
        const bool covered = std::all_of(it->begin(), it->end(), [&](const LinkUse& u) {
            return !(u.weight > 0.0) || searched(links_[u.link].mark);
        });
        if (!covered) reshare(kNoFlow, *it, now.value);
    }
    ended_.clear();
    for (auto it = added_.rbegin(); it != added_.rend(); ++it) {
        FlowState& f = flows_[*it];
        if (searched(f.mark)) continue;  // re-shared with a flow added (or ended) after it
        double solo = std::numeric_limits<double>::infinity();
        bool alone = true;
        for (std::uint32_t i = 0; i < f.use_count; ++i) {
            prefetch_use(f, i);
            if (!(f.uses[i].weight > 0.0)) continue;
            const LinkState& L = links_[f.uses[i].link];
            alone = alone && L.flows.size() == 1;
            solo = std::min(solo, L.capacity / f.uses[i].weight);
        }
        double rate = solo;
        if (alone || settles_alone(*it, rate)) {  // as start(): the same rate, the same completion
            f.mark = ++epoch_;
            f.rate = rate;
            f.is_new = false;
            announce(*it, now.value);
        } else {
            reshare(*it, {}, now.value);
        }
    }
    added_.clear();
}

void FlowNetwork::finish(FlowId id, Time now) {
    // A flow that shared no link leaves nobody to re-share with (the common case of a
    // tensor-parallel ring inside one node), nor does one that limited none of its neighbours.
    const bool quiet = !unsettled() && leaves_others_alone(id);
    if (release(id, now) && !quiet) reshare(kNoFlow, {flows_[id].uses, flows_[id].use_count}, now.value);
}

void FlowNetwork::end(FlowId id, Time now) {
    // Only while the rates are those of the flows now running: an end recorded before this one
    // has not been re-shared yet (flows added and not yet settled count as not started).
    const bool quiet = ended_.empty() && leaves_others_alone(id);
    if (release(id, now) && !quiet) ended_.emplace_back(flows_[id].uses, flows_[id].use_count);
}

// The flow is done at `now`: its bytes delivered, its links freed, its id free for reuse (its
// uses stay readable). True when another flow is left on one of its links.
bool FlowNetwork::release(FlowId id, Time now) {
    FlowState& f = flows_[id];
    assert(f.active);
    advance(f, now.value);
    // The completion time was rounded up, so what is left is rounding slack: deliver it, and the
    // whole flow counts on its links from now on.
    for (std::uint32_t i = 0; i < f.use_count; ++i) {
        if (f.uses[i].weight > 0.0) carried_[f.uses[i].link] += f.uses[i].weight * f.bytes;
    }
    f.remaining = 0.0;
    f.rate = 0.0;
    f.active = false;
    ++f.version;  // voids any completion still queued for this id
    const bool shared = detach(id);
    free_ids_.push_back(id);
    --active_;
    return shared;
}

Bytes FlowNetwork::carried(LinkId link) const {
    const LinkState& L = links_[link];
    double carried = carried_[link];
    for (const OnLink& o : L.flows) carried += o.weight * (flows_[o.flow].bytes - flows_[o.flow].remaining);
    return Bytes(carried);
}

FlowId FlowNetwork::allocate() {
    if (!free_ids_.empty()) {
        const FlowId id = free_ids_.back();
        free_ids_.pop_back();
        return id;
    }
    flows_.emplace_back();
    return static_cast<FlowId>(flows_.size() - 1);
}

// `solo` is the rate water_fill() would give the flow if it is alone on its links: the lowest
// capacity / weight (the same expression in the same order, so the same double). One pass over
// the uses does both, since each use's link line is at hand.
bool FlowNetwork::attach(FlowId id, double& solo) {
    const FlowState& f = flows_[id];
    bool alone = true;
    double level = std::numeric_limits<double>::infinity();
    for (std::uint32_t i = 0; i < f.use_count; ++i) {
        if (!(f.uses[i].weight > 0.0)) continue;
        LinkState& L = links_[f.uses[i].link];
        alone = alone && L.flows.empty();  // a link used twice is not empty the second time
        L.flows.push_back({id, f.uses[i].weight});
        level = std::min(level, L.capacity / f.uses[i].weight);
    }
    solo = level;
    return alone;
}

// True when another flow is left on one of its links. A link the flow uses twice still holds the
// second entry when the first is removed, and reads as shared: re-sharing then finds an empty
// component and changes nothing, so only time is lost, in a case that is rare.
bool FlowNetwork::detach(FlowId id) {
    const FlowState& f = flows_[id];
    bool shared = false;
    for (std::uint32_t i = 0; i < f.use_count; ++i) {
        prefetch_use(f, i);
        if (!(f.uses[i].weight > 0.0)) continue;
        auto& on = links_[f.uses[i].link].flows;
        const auto it = std::find_if(on.begin(), on.end(), [id](const OnLink& o) { return o.flow == id; });
        assert(it != on.end());
        *it = on.back();  // order on a link is irrelevant to the sharing
        on.pop_back();
        shared = shared || !on.empty();
    }
    return shared;
}

// Whether flow `id`, attached to its links but not yet sharing, can take a rate without changing
// any other flow's, and which (`rate`). The rates of the flows already settled are the max-min fair
// allocation among them (flows added and not yet settled carry rate 0 and count as not started).
// Adding the new flow at rate r keeps that allocation max-min fair when (1) none of its links is
// full now, so none is another flow's bottleneck, and (2) r is the least residual capacity / weight
// over its links and every other flow on a link at that least level is slower than r: that link is
// then the new flow's bottleneck (full, and the flow the fastest on it), and every other flow keeps
// its own. The max-min fair allocation is unique, so it is the one water-filling finds (Bertsekas &
// Gallager 6.5.2: a flow's rate is max-min fair iff each flow has a bottleneck link). In real
// numbers the rates are water-filling's; in doubles the residual is summed in another order than
// water-filling subtracts, so a rate could differ in its last bit (docs/simulator.md).
bool FlowNetwork::settles_alone(FlowId id, double& rate) {
    const FlowState& f = flows_[id];
    // One pass over the links: each one's level for the new flow (residual / weight) and its
    // fastest other flow, kept for the test at the least level.
    local_links_.clear();
    double level = std::numeric_limits<double>::infinity();
    for (std::uint32_t i = 0; i < f.use_count; ++i) {
        prefetch_use(f, i);
        if (!(f.uses[i].weight > 0.0)) continue;
        const LinkState& L = links_[f.uses[i].link];
        const Others others = others_on(L, id);
        const double left = L.capacity - others.load;
        if (others.twice || !(left > kLocalMargin * L.capacity)) return false;  // full: a bottleneck
        local_links_.push_back({left / f.uses[i].weight, others.fastest});
        level = std::min(level, local_links_.back().level);
    }
    const double near = level * (1.0 + kLocalMargin), slower = level * (1.0 - kLocalMargin);
    for (const LocalLink& l : local_links_) {
        if (l.level <= near && !(l.fastest < slower)) return false;  // full once it runs, and not its bottleneck
    }
    rate = level;
    return true;
}

// Whether flow `id` (still running, the rates those of the flows running) can end without
// changing any other flow's rate: on each of its links every other flow is slower than it (so the
// link is no other flow's bottleneck), or the link is not full. Every other flow then keeps its
// bottleneck, so the allocation without the flow is still max-min fair (see settles_alone).
bool FlowNetwork::leaves_others_alone(FlowId id) const {
    const FlowState& f = flows_[id];
    const double slower = f.rate * (1.0 - kLocalMargin);
    for (std::uint32_t i = 0; i < f.use_count; ++i) {
        prefetch_use(f, i);
        if (!(f.uses[i].weight > 0.0)) continue;
        const LinkState& L = links_[f.uses[i].link];
        const Others others = others_on(L, id);
        if (others.twice) return false;  // a link used twice: let water-filling sum it
        if (others.fastest < slower) continue;
        const double load = others.load + f.uses[i].weight * f.rate;
        if (!(L.capacity - load > kLocalMargin * L.capacity)) return false;
    }
    return true;
}

// The other flows on link L than `id`: their load (weight x rate, summed in the link's order), the
// fastest one's rate, and whether `id` is on the link more than once.
FlowNetwork::Others FlowNetwork::others_on(const LinkState& L, FlowId id) const {
    Others others;
    bool seen = false;
    for (const OnLink& o : L.flows) {
        if (o.flow == id) {
            others.twice = others.twice || seen;
            seen = true;
            continue;
        }
        const double rate = flows_[o.flow].rate;
        others.load += o.weight * rate;
        others.fastest = std::max(others.fastest, rate);
    }
    return others;
}

// Breadth-first over flows and links from a seed: every flow that shares a link with the seed,
// transitively. Marks are epoch numbers, so nothing needs clearing between searches.
//
// It also sets up water-filling, in the order water-filling's own passes would: every link met
// starts with its full capacity free, and the flows, in the order they are collected, add each
// use's weight to its link (so each link's total is the same sum in the same order) and rise.
void FlowNetwork::collect_component(FlowId seed_flow, std::span<const LinkUse> seed_links) {
    ++epoch_;
    comp_flows_.clear();
    comp_links_.clear();
    link_flows_met_.clear();
    // A link's flows are copied out when the link is first met, while its state is in the cache,
    // and visited later in that order: the order of a walk over comp_links_ and each one's flows.
    const auto visit_link = [this](LinkId l) -> LinkState& {
        LinkState& L = links_[l];
        if (L.mark != epoch_) {
            L.mark = epoch_;
            L.pos = static_cast<std::uint32_t>(comp_links_.size());
            L.free = L.capacity;
            L.weight = 0.0;
            L.unfrozen = 0;
            comp_links_.push_back(l);
            L.weight_error = 0.0;
            for (const OnLink& o : L.flows) link_flows_met_.push_back(o.flow);
        }
        return L;
    };
    const auto visit_flow = [this](FlowId f) {
        if (flows_[f].mark != epoch_) {
            flows_[f].mark = epoch_;
            flows_[f].frozen = false;
            comp_flows_.push_back(f);
        }
    };
    if (seed_flow != kNoFlow) visit_flow(seed_flow);
    for (const LinkUse& u : seed_links) {
        if (u.weight > 0.0) visit_link(u.link);
    }
    std::size_t next_flow = 0;
    std::size_t next_met = 0;
    while (next_flow < comp_flows_.size() || next_met < link_flows_met_.size()) {
        for (; next_flow < comp_flows_.size(); ++next_flow) {
            const FlowState& f = flows_[comp_flows_[next_flow]];
            for (std::uint32_t i = 0; i < f.use_count; ++i) {
                prefetch_use(f, i);
                if (!(f.uses[i].weight > 0.0)) continue;
                LinkState& L = visit_link(f.uses[i].link);
                add_compensated(L.weight, L.weight_error, f.uses[i].weight);
                ++L.unfrozen;
            }
        }
        for (; next_met < link_flows_met_.size(); ++next_met) visit_flow(link_flows_met_[next_met]);
    }
}

void FlowNetwork::advance(FlowState& f, std::int64_t now) {
    const std::int64_t elapsed = now - f.last;
    f.last = now;
    if (elapsed <= 0 || f.rate <= 0.0) return;
    const double moved = std::min(f.remaining, f.rate * static_cast<double>(elapsed) * kSecondsPerTick);
    f.remaining -= moved;
}

// The level at which a link fills: its free capacity shared by the weight of its flows still
// rising; +infinity once none rises (it takes no further part).
double FlowNetwork::link_level(const LinkState& L) const {
    return L.unfrozen == 0 ? std::numeric_limits<double>::infinity() : std::max(L.free, 0.0) / L.weight;
}

// Progressive filling over the collected component (collect_component() has set every link's
// free capacity and rising weight): the common rate `level` of unfrozen flows rises to the
// lowest (free capacity / unfrozen weight) of any link; flows on that link freeze.
//
// Each link's level lives in comp_levels_, contiguous and in the order the search met the links,
// and is brought up to date whenever a frozen flow changes the link. A round is then two scans of
// that array (its minimum, then the links at it) instead of two walks over scattered links, and
// it visits, in the same order, exactly the links that a walk over all of them would freeze at,
// in the same arithmetic: the rates are the same doubles.
void FlowNetwork::water_fill() {
    comp_levels_.resize(comp_links_.size());
    for (std::size_t i = 0; i < comp_links_.size(); ++i) {
        if (i + kPrefetchAhead < comp_links_.size()) prefetch_link(comp_links_[i + kPrefetchAhead]);
        LinkState& L = links_[comp_links_[i]];
        L.weight += L.weight_error;
        comp_levels_[i] = link_level(L);
    }
    std::size_t left = comp_flows_.size();
    while (left > 0) {
        const double level = lowest(comp_levels_);
        assert(std::isfinite(level));
        const std::size_t frozen = freeze_saturated(level);
        assert(frozen > 0);
        left -= frozen;
    }
}

std::size_t FlowNetwork::freeze_saturated(double level) {
    const double threshold = level * (1.0 + kTieFraction);
    std::size_t frozen = 0;
    for (std::size_t i = 0; i < comp_levels_.size(); ++i) {
        if (comp_levels_[i] > threshold) continue;  // still rising, or (+infinity) no longer
        const LinkState& L = links_[comp_links_[i]];
        for (const OnLink& o : L.flows) {
            FlowState& f = flows_[o.flow];
            if (f.frozen) continue;
            f.frozen = true;
            f.rate = level;
            ++frozen;
            for (std::uint32_t u = 0; u < f.use_count; ++u) {
                prefetch_use(f, u);
                if (!(f.uses[u].weight > 0.0)) continue;
                LinkState& M = links_[f.uses[u].link];
                M.free -= f.uses[u].weight * level;
                M.weight -= f.uses[u].weight;
                if (--M.unfrozen == 0) M.weight = 0.0;
                comp_levels_[M.pos] = link_level(M);
            }
        }
    }
    return frozen;
}

void FlowNetwork::announce(FlowId id, std::int64_t now) {
    FlowState& f = flows_[id];
    ++f.version;
    completions_.push_back({id, f.version, Time(now + ticks_to_deliver(f.remaining, f.done_below, f.rate))});
}

void FlowNetwork::reshare(FlowId seed_flow, std::span<const LinkUse> seed_links, std::int64_t now) {
    collect_component(seed_flow, seed_links);
    if (comp_flows_.empty()) return;
    old_rates_.resize(comp_flows_.size());
    for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
        FlowState& f = flows_[comp_flows_[i]];
        advance(f, now);
        old_rates_[i] = f.rate;
    }
    water_fill();
    for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
        FlowState& f = flows_[comp_flows_[i]];
        // An unchanged rate keeps its announced completion: the remaining bytes shrank exactly as
        // that completion assumed.
        if (f.is_new || f.rate != old_rates_[i]) announce(comp_flows_[i], now);
        f.is_new = false;
    }
}

}  // namespace cuboid::sim
