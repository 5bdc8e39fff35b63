// Communication side of engine.hpp: posting, instance start, transfer phases and flows.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "sim/engine.hpp"
#include "sim/fingerprint.hpp"

namespace cuboid::sim {

void Engine::post(std::uint32_t rank, StreamId s, const StreamSlot& slot) {
    const RankState& R = ranks_[rank];
    if (observe_) {
        for (SimObserver* obs : observers_) obs->comm_posted(rank, slot.op, now_);
    }
    const std::uint16_t group_slot = slot.group_slot();
    if (group_slot >= R.slot_count || slot_refs_[R.slot_base + group_slot].member == kNotMember) {
        throw std::logic_error("rank " + std::to_string(rank) + " op '" +
                               program_.labels.at(R.list->ops[slot.op].label) + "' uses group slot " +
                               std::to_string(group_slot) + " that names no group the rank belongs to");
    }
    const SlotRef ref = slot_refs_[R.slot_base + group_slot];
    if (rendezvous_.post(ref.group, ref.member, PostedOp{slot.op, slot.kind(), s, slot.category, slot.bytes()})) {
        start_instance(ref.group);
    }
}

// Every member has posted: ask the planner for the transfer, and let its first phase begin.
void Engine::start_instance(std::uint32_t group) {
    const std::uint32_t id = acquire_slot(transfers_, free_transfers_);
    Transfer& T = transfers_[id];
    std::span<const MemberOp> posted;
    const InstanceInfo info = rendezvous_.take(group, posted);
    T.ops.assign(posted.begin(), posted.end());
    const LastPlan& last = plan_for(group, info.kind, info.bytes, info.source);
    T.plan = last.plan;
    T.group = group;
    T.phase = 0;
    T.flows_left = 0;
    T.run.collectives = 1;
    const auto members = rendezvous_.members(group);
    prefetch_ranks(members, offsetof(RankState, clock));
    for (std::uint32_t m = 0; m < members.size(); ++m) {
        ranks_[members[m].rank].clock.comm_begins(T.ops[m].category, now_);
        if (observe_) {
            for (SimObserver* obs : observers_) obs->comm_started(members[m].rank, T.ops[m].op, now_);
        }
    }
    if (last.shortcut && exclusive_.holds(*last.shortcut, T.ops)) {
        // Links of its own while it runs: the end is known now, and the network is never involved.
        result_.flows += last.shortcut->flows;
        const Time end = lockstep_ ? start_lockstep(id) : now_ + last.shortcut->duration;
        schedule(end, Payload{id, 0, EventKind::TransferDue, 0});
        return;
    }
    const Time delay = T.plan->phases.empty() ? Time(0) : T.plan->phases.front().latency;
    schedule(now_ + delay, Payload{id, 0, EventKind::PhaseDue, 0});
}

// The plan of a request on `group`: the group's last one when the request repeats, or the one
// before when the group alternates two (a pipeline pair's activations and gradients); see
// LastPlan. The plan returned becomes the group's last.
const Engine::LastPlan& Engine::plan_for(std::uint32_t group, OpKind kind, Bytes bytes, std::uint32_t source) {
    LastPlan& last = last_plans_[group];
    const auto same = [&](const LastPlan& p) {
        return p.plan != nullptr && p.kind == kind && p.bytes == bytes.value && p.source == source;
    };
    if (!same(last)) {
        LastPlan& before = before_plans_[group];
        std::swap(last, before);
        if (same(last)) return last;
        last.plan = &planner_.plan(TransferRequest{group, kind, bytes, source});
        last.kind = kind;
        last.bytes = bytes.value;
        last.source = source;
        last.shortcut = exclusive_.find(group, *last.plan);
    }
    return last;
}

// A phase's latency has passed: its flows enter the network.
void Engine::phase_due(std::uint32_t id) {
    Transfer& T = transfers_[id];
    if (T.phase == T.plan->phases.size()) {  // a plan without phases
        finish_transfer(id);
        return;
    }
    T.flows_left = 0;
    for (const Flow& f : T.plan->phases[T.phase].flows) {
        if (network_.add(f.links, f.bytes, now_, id) == kNoFlow) continue;  // local: done already
        ++T.flows_left;
        ++result_.flows;
    }
    settle_network();
    if (T.flows_left == 0) end_phase(id);
}

void Engine::flow_due(FlowId flow, std::uint32_t version) {
    if (!network_.current(flow, version)) return;  // rescheduled since: a later event stands
    const std::uint32_t id = network_.owner(flow);
    // Re-shared once with the other flows that end now (settle_network()): an all-to-all's flows
    // often end together.
    network_.end(flow, now_);
    if (--transfers_[id].flows_left == 0) end_phase(id);
}

void Engine::end_phase(std::uint32_t id) {
    Transfer& T = transfers_[id];
    ++T.phase;
    if (T.phase < T.plan->phases.size()) {
        schedule(now_ + T.plan->phases[T.phase].latency, Payload{id, 0, EventKind::PhaseDue, 0});
    } else {
        finish_transfer(id);
    }
}

// The last phase ended: every member's op finishes now. Finishing may start new instances (and
// grow transfers_), so the record is read by index and released only at the end.
void Engine::finish_transfer(std::uint32_t id) {
    if (transfers_[id].run.collectives > 1) close_lockstep(id);
    const auto members = rendezvous_.members(transfers_[id].group);
    prefetch_ranks(members, 0);
    for (std::uint32_t m = 0; m < members.size(); ++m) {
        const std::uint32_t rank = members[m].rank;
        const MemberOp mo = transfers_[id].ops[m];
        ranks_[rank].clock.comm_ends(mo.category, now_);
        if (observe_) {
            for (SimObserver* obs : observers_) obs->comm_finished(rank, mo.op, now_);
        }
        result_.fingerprint += completion_mix(now_.value, mo.op) * ranks_[rank].key;
        stream_advanced(rank, mo.stream, 1);
    }
    free_transfers_.push_back(id);
}

// The members of a group are usually far apart in ranks_ (a data-parallel group strides over
// whole pipelines): asking for all their states first overlaps the cache misses that visiting
// them one by one would take in turn. `from` is the offset of the first field the caller reads.
void Engine::prefetch_ranks(std::span<const Rendezvous::Member> members, std::size_t from) {
    for (const Rendezvous::Member& m : members) {
        const char* r = reinterpret_cast<const char*>(&ranks_[m.rank]);
        for (std::size_t at = from; at < sizeof(RankState); at += 64) __builtin_prefetch(r + at);
    }
}

void Engine::settle_network() {
    network_.settle(now_);
    schedule_completions();
}

void Engine::schedule_completions() {
    auto& announced = network_.completions();
    for (const FlowCompletion& c : announced) schedule(c.time, Payload{c.flow, c.version, EventKind::FlowDue, 0});
    announced.clear();
}

}  // namespace cuboid::sim
