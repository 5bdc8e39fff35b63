// Set-up, event loop and stream scheduling of engine.hpp (communication: engine_comm.cpp).
#include "sim/engine.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "sim/fingerprint.hpp"

namespace cuboid::sim {
Engine::Engine(const EngineInput& input, std::span<const Link> links,
               TransferPlanner& planner, std::span<SimObserver* const> observers, const SimOptions& options)
    : program_(input.program),
      rank_programs_(input.ranks),
      groups_(input.groups),
      rank_keys_(input.rank_keys),
      planner_(planner),
      observers_(observers),
      observe_(!observers.empty()),
      network_(links),
      rendezvous_(input.program, input.groups, input.ranks) {
    const Program& program = input.program;
    if (input.indexes.size() != program.op_lists.size()) {
        throw std::logic_error("engine: one op-list index per op list expected");
    }
    indexes_ = input.indexes;
    build_ranks();
    if (options.exclusive_transfers) {
        exclusive_ = ExclusiveTransfers(program, input.ranks, input.groups, network_, planner, indexes_, input.uses);
    }
    lockstep_ = options.exclusive_transfers && options.lockstep_runs && !observe_;
    cancel_ = options.cancel;
    progress_ = options.progress;
    last_plans_.resize(groups_.size());
    before_plans_.resize(groups_.size());
    run_memos_.resize(indexes_.size());
    chain_memos_.resize(indexes_.size() * kMaxStreams);
}

void Engine::build_ranks() {
    ranks_.resize(rank_programs_.size());
    if (!rank_keys_.empty() && rank_keys_.size() != ranks_.size()) {
        throw std::logic_error("engine: one fingerprint key per rank expected");
    }
    for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
        const RankProgram& rp = rank_programs_[r];
        if (rp.op_list >= program_.op_lists.size()) {
            throw std::logic_error("rank " + std::to_string(r) + " names a missing op list");
        }
        RankState& R = ranks_[r];
        R.index = &indexes_[rp.op_list];
        R.list = &program_.op_lists[rp.op_list];
        R.key = rank_keys_.empty() ? rank_key(r) : rank_keys_[r];
        R.remaining = static_cast<std::uint32_t>(R.list->ops.size());
        ops_total_ += R.remaining;
        R.slot_base = static_cast<std::uint32_t>(slot_refs_.size());
        R.slot_count = static_cast<std::uint32_t>(rp.groups.size());
        for (const std::uint32_t g : rp.groups) {
            if (g >= groups_.size()) throw std::logic_error("rank " + std::to_string(r) + " names a missing group");
            slot_refs_.push_back({g, kNotMember});
        }
    }
    // Member index of each rank in the groups its slots name.
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
        const auto& members = groups_[g].ranks;
        for (std::uint32_t m = 0; m < members.size(); ++m) {
            if (members[m] >= ranks_.size()) throw std::logic_error("group " + std::to_string(g) + " names a missing rank");
            const RankState& R = ranks_[members[m]];
            for (std::uint32_t s = R.slot_base; s < R.slot_base + R.slot_count; ++s) {
                if (slot_refs_[s].group == g) slot_refs_[s].member = m;
            }
        }
    }
}

SimResult Engine::run() {
    for (std::uint32_t r = 0; r < ranks_.size(); ++r) {
        for (int s = 0; s < ranks_[r].index->stream_count; ++s) try_start(r, static_cast<StreamId>(s));
    }
    flush_run();
    // A look at the cancellation flag every 4,096 queue entries: microseconds apart, and a
    // relaxed load each time, which changes nothing in what is simulated.
    constexpr std::uint32_t kCancelPollMask = 4095;
    std::uint32_t popped = 0;
    while (!queue_.empty() || network_.unsettled()) {
        // Flows that ended now are re-shared together before the clock moves on (and before any
        // other kind of event: dispatch()).
        if (network_.unsettled() && (queue_.empty() || queue_.top().time != now_)) {
            settle_network();
            flush_run();
            continue;
        }
        if ((++popped & kCancelPollMask) == 0) {
            cancel_.throw_if_requested();
            if (progress_) report_progress();
        }
        const auto e = queue_.pop();
        prefetch_next();
        now_ = e.time;
        if (e.payload.kind == EventKind::Batch) {
            run_batch(e.payload.a);
        } else {
            dispatch(e.payload);
        }
        flush_run();
    }
    const bool stuck = std::any_of(ranks_.begin(), ranks_.end(), [](const RankState& R) { return R.remaining > 0; });
    if (stuck) report_deadlock();
    if (progress_) report_progress();

    result_.ranks.resize(ranks_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
        result_.ranks[r] = {ranks_[r].finish, ranks_[r].clock.parts()};
        result_.makespan = std::max(result_.makespan, ranks_[r].finish);
    }
    return result_;
}

void Engine::report_progress() const {
    progress_(SimProgress{ops_done_, ops_total_, now_, result_.events});
}

// Events scheduled back to back for the same time hold consecutive sequence numbers, so nothing
// can run between them: anything scheduled later, even for that same time, comes after all of
// them. Such a run (typically the compute chains that the members of a collective start when it
// ends together) therefore enters the queue as one entry and runs in scheduling order, exactly as
// its events one by one would, with one queue insertion and removal instead of one per event.
void Engine::schedule(Time at, const Payload& payload) {
    if (!run_.empty() && at != run_time_) flush_run();
    run_time_ = at;
    run_.push_back(payload);
}

void Engine::flush_run() {
    if (run_.size() == 1) {
        queue_.push(run_time_, run_.front());
    } else if (run_.size() > 1) {
        const std::uint32_t id = acquire_slot(batches_, free_batches_);
        batches_[id].swap(run_);  // run_ takes the batch's empty storage
        queue_.push(run_time_, Payload{id, 0, EventKind::Batch, 0});
    }
    run_.clear();
}

void Engine::dispatch(const Payload& p) {
    if (p.kind != EventKind::FlowDue && network_.unsettled()) settle_network();
    ++result_.events;
    switch (p.kind) {
        case EventKind::OpsDone: ops_done(p.a, p.stream, p.b); break;
        case EventKind::PhaseDue: phase_due(p.a); break;
        case EventKind::FlowDue: flow_due(p.a, p.b); break;
        case EventKind::TransferDue: finish_transfer(p.a); break;
        case EventKind::RunCheckpoint: checkpoint(p.a, p.b); break;
        case EventKind::Batch: break;  // never nested: a run holds events, not batches
    }
}

// Read by index: an event may schedule and flush runs, which adds batches (they move intact).
void Engine::run_batch(std::uint32_t id) {
    for (std::size_t i = 0; i < batches_[id].size(); ++i) {
        if (i + 1 < batches_[id].size()) prefetch_rank(batches_[id][i + 1]);
        dispatch(batches_[id][i]);
    }
    batches_[id].clear();
    free_batches_.push_back(id);
}

// The rank state of the next event is a cache miss more often than not (thousands of ranks take
// turns); asking for it now overlaps the miss with the current event. Only a next event already
// due now is looked at: finding a later one would mean searching the queue.
void Engine::prefetch_next() {
    const Payload* next = queue_.due_payload();
    if (next != nullptr) prefetch_rank(*next);
}

void Engine::prefetch_rank(const Payload& p) const {
    if (p.kind == EventKind::OpsDone) {
        const char* r = reinterpret_cast<const char*>(&ranks_[p.a]);
        __builtin_prefetch(r);
        __builtin_prefetch(r + 64);
        __builtin_prefetch(r + 128);
    }
}

// Starts the head op of stream `s` if its stream is idle and the other streams have finished
// what it depends on; otherwise records the first count it waits for.
void Engine::try_start(std::uint32_t rank, StreamId s) {
    RankState& R = ranks_[rank];
    const auto& slots = R.index->streams[s];
    const std::uint32_t p = R.done[s];
    if (p >= slots.size()) return;
    const StreamSlot& slot = slots[p];
    const Requirement* req = R.index->requirements.data();
    for (std::uint32_t i = slot.req_begin; i < slot.req_end(); ++i) {
        if (R.done[req[i].stream] < req[i].count) {
            R.waiters[req[i].stream] = static_cast<StreamMask>(R.waiters[req[i].stream] | (1U << s));
            R.wait_count[s] = req[i].count;
            return;
        }
    }
    R.busy = static_cast<StreamMask>(R.busy | (1U << s));
    if (slot.is_comm) {
        post(rank, s, slot);
        return;
    }
    if (s == kComputeStream) R.clock.compute_begins(now_);
    else if (comm_class_of(slot.category) >= 0) R.clock.comm_begins(slot.category, now_);  // a copy off the compute stream
    schedule(now_ + Time(slot.chain_time()), Payload{rank, p, EventKind::OpsDone, s});
}

// After stream `finished` advanced: retry itself and the idle streams waiting for it, in stream
// order. A stream leaves the waiters of `finished` when it is retried; if it still cannot start,
// try_start enters it again where it waits now. (A retry changes nothing of the other streams, so
// the candidates can be taken once, up front.)
void Engine::wake(std::uint32_t rank, StreamId finished) {
    RankState& R = ranks_[rank];
    const unsigned self = 1U << finished;
    unsigned todo = R.waiters[finished] | self;
    while (todo != 0) {
        const auto s = static_cast<StreamId>(std::countr_zero(todo));
        const unsigned bit = 1U << s;
        todo &= todo - 1;
        if (bit != self) {
            if (R.done[finished] < R.wait_count[s]) continue;
            R.waiters[finished] = static_cast<StreamMask>(R.waiters[finished] & ~bit);
        }
        try_start(rank, s);
    }
}

// A compute chain ended: report each of its ops at its own times, then advance the stream.
void Engine::ops_done(std::uint32_t rank, StreamId s, std::uint32_t head) {
    RankState& R = ranks_[rank];
    const auto& slots = R.index->streams[s];
    const StreamSlot& h = slots[head];
    if (observe_) {
        std::int64_t t = now_.value - h.chain_time();
        for (std::uint32_t p = head; p <= h.chain_last; ++p) {
            const std::uint32_t op = slots[p].op;
            for (SimObserver* o : observers_) o->compute_started(rank, op, Time(t));
            t += slots[p].duration();
            for (SimObserver* o : observers_) o->compute_finished(rank, op, Time(t));
        }
    }
    // Without observers the digest sum stays in a register across the chain (a virtual call
    // would force it to memory on every op). The sum commutes, so reporting after is the same.
    // Every digest of the chain has the rank's key as a factor (fingerprint.hpp): multiply once.
    ChainMemo& memo = chain_memos_[static_cast<std::size_t>(R.index - indexes_.data()) * kMaxStreams + s];
    if (memo.head != head || memo.end != now_.value) memo = {head, now_.value, chain_digest(slots, head, now_.value)};
    result_.fingerprint += memo.digest * R.key;
    if (s == kComputeStream) R.clock.compute_ends(now_, Time(h.chain_time()), Time(chain_recompute(slots, head)));
    else if (comm_class_of(h.category) >= 0) R.clock.comm_ends(h.category, now_);
    stream_advanced(rank, s, h.chain_last - head + 1);
}

std::uint64_t Engine::chain_digest(const std::vector<StreamSlot>& slots, std::uint32_t head, std::int64_t end) {
    const StreamSlot& h = slots[head];
    std::int64_t t = end - h.chain_time();
    std::uint64_t digest = 0;
    for (std::uint32_t p = head; p <= h.chain_last; ++p) {
        t += slots[p].duration();
        digest += completion_mix(t, slots[p].op);
    }
    return digest;
}

void Engine::stream_advanced(std::uint32_t rank, StreamId s, std::uint32_t ops) {
    RankState& R = ranks_[rank];
    R.done[s] += ops;
    R.busy = static_cast<StreamMask>(R.busy & ~(1U << s));
    R.remaining -= ops;
    ops_done_ += ops;
    if (R.remaining == 0) {
        R.finish = now_;
        R.clock.close(now_);
    }
    wake(rank, s);
}

}  // namespace cuboid::sim
