// Communication side of engine.hpp: posting, instance start, transfer phases and flows.
#include <stdexcept>
#include <string>

#include "sim/engine.hpp"
#include "sim/fingerprint.hpp"

namespace cuboid::sim {

void Engine::post(std::uint32_t rank, StreamId s, std::uint32_t op) {
    const RankState& R = ranks_[rank];
    const Op& o = R.list->ops[op];
    if (observe_) {
        for (SimObserver* obs : observers_) obs->comm_posted(rank, op, now_);
    }
    if (o.group_slot >= R.slot_count || slot_refs_[R.slot_base + o.group_slot].member == kNotMember) {
        throw std::logic_error("rank " + std::to_string(rank) + " op '" + program_.labels.at(o.label) +
                               "' uses group slot " + std::to_string(o.group_slot) +
                               " that names no group the rank belongs to");
    }
    const SlotRef ref = slot_refs_[R.slot_base + o.group_slot];
    if (rendezvous_.post(ref.group, ref.member, op, o)) start_instance(ref.group);
}

// Every member has posted: ask the planner for the transfer, and let its first phase begin.
void Engine::start_instance(std::uint32_t group) {
    std::uint32_t id = 0;
    if (free_transfers_.empty()) {
        id = static_cast<std::uint32_t>(transfers_.size());
        transfers_.emplace_back();
    } else {
        id = free_transfers_.back();
        free_transfers_.pop_back();
    }
    Transfer& T = transfers_[id];
    const InstanceInfo info = rendezvous_.take(group, T.ops);
    T.plan = &planner_.plan(TransferRequest{group, info.kind, info.bytes, info.source});
    T.group = group;
    T.phase = 0;
    T.flows_left = 0;
    const auto& members = program_.groups[group].ranks;
    for (std::uint32_t m = 0; m < members.size(); ++m) {
        RankState& R = ranks_[members[m]];
        R.clock.comm_begins(R.list->ops[T.ops[m]].category, now_);
        if (observe_) {
            for (SimObserver* obs : observers_) obs->comm_started(members[m], T.ops[m], now_);
        }
    }
    const Time delay = T.plan->phases.empty() ? Time(0) : T.plan->phases.front().latency;
    queue_.push(now_ + delay, Payload{id, 0, EventKind::PhaseDue, 0});
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
        if (network_.start(f.links, f.bytes, now_, id) == kNoFlow) continue;  // local: done already
        ++T.flows_left;
        ++result_.flows;
    }
    schedule_completions();
    if (T.flows_left == 0) end_phase(id);
}

void Engine::flow_due(FlowId flow, std::uint32_t version) {
    if (!network_.current(flow, version)) return;  // rescheduled since: a later event stands
    const std::uint32_t id = network_.owner(flow);
    network_.finish(flow, now_);
    schedule_completions();
    if (--transfers_[id].flows_left == 0) end_phase(id);
}

void Engine::end_phase(std::uint32_t id) {
    Transfer& T = transfers_[id];
    ++T.phase;
    if (T.phase < T.plan->phases.size()) {
        queue_.push(now_ + T.plan->phases[T.phase].latency, Payload{id, 0, EventKind::PhaseDue, 0});
    } else {
        finish_transfer(id);
    }
}

// The last phase ended: every member's op finishes now. Finishing may start new instances (and
// grow transfers_), so the record is read by index and released only at the end.
void Engine::finish_transfer(std::uint32_t id) {
    const std::uint32_t group = transfers_[id].group;
    const auto& members = program_.groups[group].ranks;
    for (std::uint32_t m = 0; m < members.size(); ++m) {
        const std::uint32_t rank = members[m];
        const std::uint32_t op = transfers_[id].ops[m];
        RankState& R = ranks_[rank];
        const Op& o = R.list->ops[op];
        R.clock.comm_ends(o.category, now_);
        if (observe_) {
            for (SimObserver* obs : observers_) obs->comm_finished(rank, op, now_);
        }
        result_.fingerprint += completion_digest(now_.value, rank, op);
        stream_advanced(rank, o.stream, 1);
    }
    free_transfers_.push_back(id);
}

void Engine::schedule_completions() {
    auto& announced = network_.completions();
    for (const FlowCompletion& c : announced) queue_.push(c.time, Payload{c.flow, c.version, EventKind::FlowDue, 0});
    announced.clear();
}

}  // namespace cuboid::sim
