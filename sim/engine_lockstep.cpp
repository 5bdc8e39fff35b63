// Lockstep runs of engine.hpp (docs/simulator.md, "Lockstep runs").
//
// When an exclusive collective of a lockstep class (CommClass::lockstep: cuboid's tensor-parallel
// collectives) starts, its members leave it together, and its
// duration is known. If they all run the same op list from the same position, and the compute
// stream waits for that collective, every member's compute stream and communication stream are
// from then on the same function of time, as long as their ops wait only for each other and the
// collectives stay exclusive: chains take their fixed durations, and each later collective starts
// when the members post it, all at once. The engine therefore plans that stretch (the run) for one
// member when its first collective starts, without events: it schedules the end of the run's last
// collective as the first one's end, and one checkpoint for each moment at which a stream outside
// the run waits for one of its ops (a data-parallel reduction for a gradient, say). Stream
// counts, fingerprint digests (each op at its own time) and the breakdown are those of the
// step-by-step execution.
//
// The run ends with its last collective. A chain that overlaps that collective (a weight-gradient
// GEMM beside it) may still run then; the engine ends it as any chain, with its own event.
//
// The breakdown: from the first collective's start to the last one's end, the compute stream of a
// member either runs a chain of the run or waits for a collective of the run, which is moving
// data then. The clock, which sees one transfer of the run's class open all along and an idle
// compute stream, charges all of it to that class; the run's chain time is moved to compute afterwards
// (BreakdownClock::lockstep_ends).
#include <algorithm>
#include <bit>
#include <utility>
#include <stdexcept>
#include <string>

#include "sim/engine.hpp"
#include "sim/fingerprint.hpp"

namespace cuboid::sim {

// Called as the first collective of transfer `id` starts with a shortcut: returns when the run
// it begins ends (its own end when it begins none). The run is planned unless the op list's last
// run was planned from the same state (engine_run_memo.cpp).
Time Engine::start_lockstep(std::uint32_t id) {
    Transfer& T = transfers_[id];
    const Time first_end = now_ + last_plans_[T.group].shortcut->duration;
    const auto members = rendezvous_.members(T.group);
    const MemberOp lead = T.ops[0];
    const OpListIndex* index = ranks_[members[0].rank].index;
    const std::uint32_t first = index->position[lead.op];
    if (!index->lockstep_start[lead.stream][first]) return first_end;
    for (std::uint32_t m = 1; m < members.size(); ++m) {
        if (ranks_[members[m].rank].index != index || T.ops[m].op != lead.op) return first_end;
    }
    // The first duration is read now: checking the memo asks plan_for about later collectives,
    // which changes the group's LastPlan.
    const RunStart start{*index, lead.stream, first, T.group, members[0].rank, first_end - now_};
    RunMemo& memo = run_memos_[static_cast<std::size_t>(index - indexes_.data())];
    if (!memo_holds(memo, start)) plan_lockstep(memo, start);
    result_.flows += memo.flows;
    if (memo.outcome.collectives == 1) return memo.end;
    T.run = memo.outcome;  // into storage the record keeps: no allocation once warm
    rendezvous_.skip(T.group, T.run.collectives - 1);
    for (std::uint32_t k = 0; k < T.run.checkpoints.size(); ++k) {
        schedule(T.run.checkpoints[k].at, Payload{id, k, EventKind::RunCheckpoint, 0});
    }
    return memo.end;
}

// Plans the run of one member from `start` into `memo`: what it was planned from, and what it
// comes to.
void Engine::plan_lockstep(RunMemo& memo, const RunStart& start) {
    const OpListIndex& index = start.index;
    const StreamId x = start.comm;
    const std::uint32_t first = start.first;
    memo.first = first;
    memo.stream = x;
    memo.at = now_;
    memo.first_duration = start.first_duration;
    memo.calls.clear();
    memo.flows = 0;
    memo.end = now_ + start.first_duration;
    RunOutcome& run = memo.outcome;
    run.collectives = 1;
    plan_run(start, memo.calls);
    const RunEnd end = run_end(index, x, first);
    if (end.last == 0) return;

    // What the run adds up to: its chains but one still running, and its collectives but the
    // last, which ends as any transfer.
    const auto& comm = index.streams[x];
    const auto& chains = index.streams[kComputeStream];
    const auto& awaited = index.awaited_by;
    const auto outside_c = static_cast<StreamMask>(~(1U << x));
    const auto outside_x = static_cast<StreamMask>(~(1U << kComputeStream));
    run.checkpoints.clear();
    run.busy = Time(0);
    run.recompute = Time(0);
    run.digest = 0;
    run.running_start = Time(-1);
    run.running_end = Time(-1);
    run.compute_count = index.compute_requirement(comm[first]);
    for (std::uint32_t k = 0; k < end.chains; ++k) {
        const RunChain& c = run_chains_[k];
        const StreamSlot& head = chains[run.compute_count];
        if (end.running && k + 1 == end.chains) {
            run.running_end = Time(c.end);
            run.running_start = Time(c.end - head.chain_time());
            break;
        }
        run.busy += Time(head.chain_time());
        run.recompute += Time(chain_recompute(chains, run.compute_count));
        run.digest += chain_digest(chains, run.compute_count, c.end);
        run.compute_count = c.end_count;
        if ((awaited[kComputeStream][c.end_count - 1] & outside_c) != 0) {
            run.checkpoints.push_back({Time(c.end), c.end_count, kComputeStream});
        }
    }
    for (std::uint32_t k = 0; k < end.last; ++k) {
        const RunCollective& c = run_collectives_[k];
        run.digest += completion_mix(c.end, comm[first + k].op);
        if (k > 0) memo.flows += c.flows;
        if ((awaited[x][first + k] & outside_x) != 0) {
            run.checkpoints.push_back({Time(c.end), first + k + 1, x});
        }
    }
    memo.flows += run_collectives_[end.last].flows;
    run.collectives = end.last + 1;
    run.comm_count = first + end.last;
    run.last_op = comm[first + end.last].op;
    memo.end = Time(run_collectives_[end.last].end);
    // By time, keeping the order above among equal times, and before the run's end when
    // simultaneous with it (as a chain that ends with the last collective is reported before the
    // collective that was scheduled later). An insertion sort: the two lists above are each in
    // time order and short, and a run must not allocate.
    auto& cps = run.checkpoints;
    for (std::size_t i = 1; i < cps.size(); ++i) {
        for (std::size_t j = i; j > 0 && cps[j].at < cps[j - 1].at; --j) std::swap(cps[j], cps[j - 1]);
    }
}

// One member's compute chains and collectives from the first collective's start (now), as far as
// they wait only for each other and the collectives have shortcuts, into run_chains_ and
// run_collectives_ (the first collective at index 0). The two streams are advanced in turn, each
// as far as the other allows.
void Engine::plan_run(const RunStart& start, std::vector<RunPlanCall>& calls) {
    const OpListIndex& index = start.index;
    const StreamId x = start.comm;
    const std::uint32_t first = start.first;
    // Raw views, read into locals once: the pushes below store pointers, which the compiler must
    // otherwise assume may change the index's vectors, and reload them for every chain.
    const std::span<const StreamSlot> chains(index.streams[kComputeStream]);
    const std::span<const StreamSlot> comm(index.streams[x]);
    const Requirement* const reqs = index.requirements.data();
    // The count of stream `s` that `slot` waits for, and whether it waits for any other stream.
    const auto needs_of = [reqs](const StreamSlot& slot, StreamId s, bool& others) {
        std::uint32_t count = 0;
        others = false;
        for (std::uint32_t i = slot.req_begin; i < slot.req_end(); ++i) {
            if (reqs[i].stream == s) count = reqs[i].count;
            else others = true;
        }
        return count;
    };
    run_chains_.clear();
    run_collectives_.assign(1, {(now_ + start.first_duration).value, 0});
    const std::uint32_t compute_base = index.compute_requirement(comm[first]);
    const std::uint16_t group_slot = comm[first].group_slot();
    std::uint32_t head = compute_base;
    std::int64_t compute_free = now_.value;  // the compute stream waits for the first collective
    bool compute_stops = false;
    bool comm_stops = false;
    // The first planned chain that ends at or past the count a collective needs. The counts
    // collectives need rarely go down along the stream, so a cursor that only moves forward finds
    // it without a search (a binary search branches unpredictably, once per collective).
    std::size_t cursor = 0;
    // What the next chain and the next collective need, kept while they wait for the other
    // stream to be planned further (kUnknown: not looked at yet).
    constexpr std::uint32_t kUnknown = 0xffffffffU;
    std::uint32_t chain_needs = kUnknown;
    std::uint32_t comm_needs = kUnknown;
    for (bool moved = true; moved;) {
        moved = false;
        while (!compute_stops && head < chains.size()) {
            const StreamSlot& h = chains[head];
            if (chain_needs == kUnknown) {
                bool others = false;
                chain_needs = needs_of(h, x, others);
                if (h.is_comm || others) {
                    compute_stops = true;
                    break;
                }
            }
            std::int64_t t = compute_free;
            if (chain_needs > first) {
                if (chain_needs - first > run_collectives_.size()) break;  // the collective is not planned yet
                t = std::max(t, run_collectives_[chain_needs - first - 1].end);
            }
            // The chain's digest is taken only if it belongs to the run (start_lockstep): chains
            // planned past the run's end are planned again by a later run.
            t += h.chain_time();
            run_chains_.push_back({h.chain_last + 1, chain_needs, t});
            compute_free = t;
            head = h.chain_last + 1;
            chain_needs = kUnknown;
            moved = true;
        }
        while (!comm_stops) {
            const std::uint32_t j = first + static_cast<std::uint32_t>(run_collectives_.size());
            if (comm_needs == kUnknown) {
                // One group, so one class: the clock charges the run's wait to the first's.
                if (j >= comm.size() || !index.lockstep_collective(comm[j]) || comm[j].group_slot() != group_slot ||
                    comm[j].category != comm[first].category) {
                    comm_stops = true;
                    break;
                }
                bool others = false;
                comm_needs = needs_of(comm[j], kComputeStream, others);
                if (others) {
                    comm_stops = true;
                    break;
                }
            }
            std::int64_t post = run_collectives_.back().end;
            if (comm_needs > compute_base) {
                if (cursor > 0 && run_chains_[cursor - 1].end_count >= comm_needs) cursor = 0;  // went down
                while (cursor < run_chains_.size() && run_chains_[cursor].end_count < comm_needs) ++cursor;
                if (cursor == run_chains_.size()) break;  // the chain is not planned yet
                post = std::max(post, run_chains_[cursor].end);
            }
            // The request the rendezvous would describe: the members' (identical) kind and
            // bytes, the group's first rank as source (a collective, never a pair).
            const StreamSlot& c = comm[j];
            // Every call and its outcome is recorded: they are all that plan_run learns of the
            // group (RunMemo).
            const LastPlan& plan = plan_for(start.group, c.kind(), c.bytes(), start.source);
            if (!plan.shortcut || !exclusive_.holds(*plan.shortcut, c.op)) {
                record_call(calls, comm, {j, false, Time(0), 0});
                comm_stops = true;
                break;
            }
            record_call(calls, comm, {j, true, plan.shortcut->duration, plan.shortcut->flows});
            run_collectives_.push_back({post + plan.shortcut->duration.value, plan.shortcut->flows});
            comm_needs = kUnknown;
            moved = true;
        }
    }
}

// The last collective at whose end the run can hand its streams back, and the chains that belong
// to the run then: those that need only earlier collectives. Every one of them but the last has
// ended by then; the last may still run (it overlaps the last collective) and the engine ends it
// as any chain. If the compute stream is idle instead, its next op must wait for the last
// collective, or it would have started earlier. And every collective of the run waits only for
// chains that have ended.
Engine::RunEnd Engine::run_end(const OpListIndex& index, StreamId x, std::uint32_t first) const {
    const auto& chains = index.streams[kComputeStream];
    const auto& comm = index.streams[x];
    const std::uint32_t compute_base = index.compute_requirement(comm[first]);
    for (auto last = static_cast<std::uint32_t>(run_collectives_.size()); last-- > 1;) {
        const std::int64_t end = run_collectives_[last].end;
        std::uint32_t c = 0;
        while (c < run_chains_.size() && run_chains_[c].needs <= first + last) ++c;
        const bool running = c > 0 && run_chains_[c - 1].end > end;
        const std::uint32_t count = c > 0 ? run_chains_[c - 1].end_count : compute_base;
        const std::uint32_t ended = !running ? count : c > 1 ? run_chains_[c - 2].end_count : compute_base;
        bool others = false;
        if (!running && count < chains.size() && index.requirement_on(chains[count], x, others) < first + last + 1) {
            continue;
        }
        bool posted = true;
        for (std::uint32_t k = 1; k <= last && posted; ++k) {
            posted = index.requirement_on(comm[first + k], kComputeStream, others) <= ended;
        }
        if (posted) return {last, c, running};
    }
    return {};
}

// Every member's `stream` reaches the checkpoint's count: streams outside the run that wait for
// it may start. The run's own streams stay with the run.
void Engine::checkpoint(std::uint32_t id, std::uint32_t k) {
    const Transfer& T = transfers_[id];
    const RunCheckpoint cp = T.run.checkpoints[k];
    const auto run_streams = static_cast<unsigned>((1U << kComputeStream) | (1U << T.ops[0].stream));
    for (const Rendezvous::Member& member : rendezvous_.members(T.group)) {
        RankState& R = ranks_[member.rank];
        R.remaining -= cp.count - R.done[cp.stream];
        ops_done_ += cp.count - R.done[cp.stream];
        R.done[cp.stream] = cp.count;
        unsigned todo = R.waiters[cp.stream] & ~run_streams;
        while (todo != 0) {
            const auto s = static_cast<StreamId>(std::countr_zero(todo));
            todo &= todo - 1;
            if (R.done[cp.stream] < R.wait_count[s]) continue;
            R.waiters[cp.stream] = static_cast<StreamMask>(R.waiters[cp.stream] & ~(1U << s));
            try_start(member.rank, s);
        }
    }
}

// The run of transfer `id` ends now, with its last collective: every member's streams take the
// counts they have then, the run's ops are reported, and a chain still running is scheduled to end
// as any chain. Afterwards the transfer is that last collective, ending now.
void Engine::close_lockstep(std::uint32_t id) {
    Transfer& T = transfers_[id];
    const StreamId x = T.ops[0].stream;
    const bool running = T.run.running_end >= Time(0);
    const auto compute_bit = static_cast<StreamMask>(1U << kComputeStream);
    const auto members = rendezvous_.members(T.group);
    std::uint64_t keys = 0;
    for (std::uint32_t m = 0; m < members.size(); ++m) {
        const std::uint32_t rank = members[m].rank;
        RankState& R = ranks_[rank];
        keys += R.key;
        const std::uint32_t finished = (T.run.compute_count - R.done[kComputeStream]) + (T.run.comm_count - R.done[x]);
        R.remaining -= finished;
        ops_done_ += finished;
        R.done[kComputeStream] = T.run.compute_count;
        R.done[x] = T.run.comm_count;
        R.clock.lockstep_ends(now_, T.ops[m].category, T.run.busy, T.run.recompute,
                              running ? T.run.running_start : Time(-1));
        if (running) {
            // The compute stream is busy, no longer waiting for the collective that ends now.
            R.busy = static_cast<StreamMask>(R.busy | compute_bit);
            R.waiters[x] = static_cast<StreamMask>(R.waiters[x] & ~compute_bit);
            schedule(T.run.running_end, Payload{rank, T.run.compute_count, EventKind::OpsDone, kComputeStream});
        }
        T.ops[m].op = T.run.last_op;
    }
    // Every member has the same times and ops: one digest, times the sum of their keys.
    result_.fingerprint += T.run.digest * keys;
    T.run.collectives = 1;
}

}  // namespace cuboid::sim
