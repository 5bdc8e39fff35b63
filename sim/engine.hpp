// The state and event loop behind simulate(): one value per simulation, nothing global.
//
// Per rank the executor keeps only a finished-op counter per stream (see op_list_index.hpp); the
// ops themselves and everything derived from them are shared by all ranks of an OpList. Events
// are: a compute op (or merged chain) ends; a transfer phase's latency has passed; a flow's
// announced completion time has come (possibly void: rescheduled since); a transfer on links of
// its own ends (exclusive.hpp), possibly the last of a lockstep run of a tensor group's
// collectives and chains (engine_lockstep.cpp); a stream outside such a run may go on
// (RunCheckpoint). Events scheduled back to back for one time share a queue entry
// (Engine::schedule).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sim/breakdown_clock.hpp"
#include "sim/event_queue.hpp"
#include "sim/exclusive.hpp"
#include "sim/executor.hpp"
#include "sim/flow_network.hpp"
#include "sim/op_list_index.hpp"
#include "sim/rendezvous.hpp"

namespace cuboid::sim {

// What an engine runs: the op lists and labels of `program`, with ranks and groups that are the
// program's own or those of a folded program (sim/fold.hpp), and the fingerprint key of each rank
// (empty: rank_key(rank); a folded rank carries the sum of its orbit's keys), the program's
// op-list indexes, which carry the compute durations (op_list_index.hpp), and its communication
// uses if already known (symmetry.hpp).
struct EngineInput {
    const Program& program;
    std::span<const RankProgram> ranks;
    std::span<const Group> groups;
    std::span<const std::uint64_t> rank_keys;
    // index_op_lists(program, costs, SimOptions::merge_compute_chains): one per op list.
    std::span<const OpListIndex> indexes;
    const CommUses* uses = nullptr;  // communication_uses(indexes), when the caller has it

    static EngineInput whole(const Program& p, std::span<const OpListIndex> indexes) {
        return {p, p.ranks, p.groups, {}, indexes};
    }
};

// Index of a record to reuse from `pool`: a released one if any, else a new one at the end.
// Records are reused, not erased, so the vectors they hold keep their storage between uses.
template <typename T>
std::uint32_t acquire_slot(std::vector<T>& pool, std::vector<std::uint32_t>& released) {
    if (released.empty()) {
        pool.emplace_back();
        return static_cast<std::uint32_t>(pool.size() - 1);
    }
    const std::uint32_t id = released.back();
    released.pop_back();
    return id;
}

class Engine {
public:
    Engine(const EngineInput& input, std::span<const Link> links, TransferPlanner& planner,
           std::span<SimObserver* const> observers, const SimOptions& options);
    SimResult run();

private:
    enum class EventKind : std::uint8_t { OpsDone, PhaseDue, FlowDue, TransferDue, RunCheckpoint, Batch };
    struct Payload {
        std::uint32_t a = 0;  // OpsDone: rank; PhaseDue, TransferDue, RunCheckpoint: transfer; FlowDue: flow; Batch: batch
        std::uint32_t b = 0;  // OpsDone: stream position of the chain head; FlowDue: version; RunCheckpoint: its index
        EventKind kind = EventKind::OpsDone;
        StreamId stream = 0;  // OpsDone
    };
    static constexpr std::uint32_t kNotMember = 0xffffffffU;
    // The first cache line holds what every event of the rank reads (wake, try_start, ops_done).
    struct alignas(64) RankState {
        const OpListIndex* index = nullptr;
        std::array<std::uint32_t, kMaxStreams> done{};  // finished ops per stream
        std::uint32_t remaining = 0;                    // ops not yet finished
        std::uint32_t slot_base = 0;                    // this rank's group slots in slot_refs_
        StreamMask busy = 0;                            // bit per stream: an op is running or posted on it
        // waiters[f], bit s: the head of idle stream s waits for stream f to reach wait_count[s].
        // A stream waits on one stream at most, so when f advances only these streams (and f)
        // need a retry, without a look at the others.
        std::array<StreamMask, kMaxStreams> waiters{};
        std::uint32_t slot_count = 0;
        std::array<std::uint32_t, kMaxStreams> wait_count{};
        const OpList* list = nullptr;
        std::uint64_t key = 0;  // fingerprint key (fingerprint.hpp)
        Time finish{0};
        BreakdownClock clock;
    };
    struct SlotRef {
        std::uint32_t group = 0;
        std::uint32_t member = 0;  // index of the rank in the group's ranks
    };
    // The last request of a group and what it became: a group repeats one request (a tensor
    // all-reduce of one activation size) thousands of times, or alternates two (a pipeline
    // pair's activations and gradients), and planners cache plans, so the same request gives the
    // same plan without asking again. Each group keeps its last two.
    struct LastPlan {
        const TransferPlan* plan = nullptr;
        OpKind kind = OpKind::AllReduce;
        double bytes = 0.0;
        std::uint32_t source = 0;
        std::optional<ExclusiveTransfers::Shortcut> shortcut;
    };
    // A moment inside a lockstep run when `stream` of every member reaches `count`, which some
    // stream outside the run waits for.
    struct RunCheckpoint {
        Time at{0};
        std::uint32_t count = 0;
        StreamId stream = 0;
    };
    // One member's timeline as a lockstep run is planned: its compute chains and collectives.
    struct RunChain {
        std::uint32_t end_count = 0;  // compute-stream count when it ends
        std::uint32_t needs = 0;      // the communication-stream count it waited for
        std::int64_t end = 0;
    };
    struct RunCollective {
        std::int64_t end = 0;
        std::uint32_t flows = 0;
    };
    // A lockstep run (sim/engine_lockstep.cpp): its collectives (1: none), the stream counts
    // every member has when its last collective ends, that collective, what the run's compute
    // chains add to the breakdown and the fingerprint, and the moments at which streams outside
    // the run wait for one of its ops.
    struct RunOutcome {
        std::uint32_t collectives = 1;
        std::uint32_t compute_count = 0;
        std::uint32_t comm_count = 0;
        std::uint32_t last_op = 0;
        Time busy{0};
        Time recompute{0};
        std::uint64_t digest = 0;
        std::vector<RunCheckpoint> checkpoints;
        // A chain of the run still running at its end (it overlaps the last collective): its
        // start and end (running_end < 0: none); the engine ends it as any chain.
        Time running_start{-1};
        Time running_end{-1};
    };
    // What plan_run learnt from one plan_for call: the collective at `position` of the
    // communication stream has a shortcut that holds (ok), of that duration and flow count.
    // `repeat`: the previous call asked the same request and had the same outcome.
    struct RunPlanCall {
        std::uint32_t position = 0;
        bool ok = false;
        Time duration{0};
        std::uint32_t flows = 0;
        bool repeat = false;
    };
    // The last run planned from an op list (sim/engine_run_memo.cpp): what it was planned from
    // (position, time, first duration and plan_run's plan_for calls) and what it came to (the
    // outcome, the flows the run adds to SimResult::flows, its end).
    struct RunMemo {
        std::uint32_t first = kNotMember;
        StreamId stream = 0;
        Time at{-1};
        Time first_duration{0};
        std::vector<RunPlanCall> calls;
        RunOutcome outcome;
        std::uint64_t flows = 0;
        Time end{0};
    };
    struct Transfer {
        const TransferPlan* plan = nullptr;
        std::uint32_t group = 0;
        std::uint32_t phase = 0;
        std::uint32_t flows_left = 0;
        std::vector<MemberOp> ops;  // the op posted by each member
        RunOutcome run;             // a lockstep run that this transfer began
    };

    void build_ranks();
    void schedule(Time at, const Payload& payload);
    void flush_run();
    void dispatch(const Payload& payload);
    void run_batch(std::uint32_t id);
    void prefetch_next();
    void prefetch_rank(const Payload& payload) const;
    void try_start(std::uint32_t rank, StreamId s);
    void wake(std::uint32_t rank, StreamId finished);
    void ops_done(std::uint32_t rank, StreamId s, std::uint32_t head);
    void stream_advanced(std::uint32_t rank, StreamId s, std::uint32_t ops);
    // Sum of completion_mix over the chain at `head` of `slots`, which ends at `end`.
    static std::uint64_t chain_digest(const std::vector<StreamSlot>& slots, std::uint32_t head, std::int64_t end);
    void post(std::uint32_t rank, StreamId s, const StreamSlot& slot);
    void start_instance(std::uint32_t group);
    const LastPlan& plan_for(std::uint32_t group, OpKind kind, Bytes bytes, std::uint32_t source);
    Time start_lockstep(std::uint32_t transfer);
    // Where a lockstep run may begin: collective `first` of stream `comm` of `index`, which
    // starts now on `group` and lasts `first_duration`; `source` is the group's first rank.
    struct RunStart {
        const OpListIndex& index;
        StreamId comm = 0;
        std::uint32_t first = 0;
        std::uint32_t group = 0;
        std::uint32_t source = 0;
        Time first_duration{0};
    };
    bool memo_holds(const RunMemo& memo, const RunStart& start);
    static void record_call(std::vector<RunPlanCall>& calls, std::span<const StreamSlot> comm, RunPlanCall call);
    void plan_lockstep(RunMemo& memo, const RunStart& start);
    void plan_run(const RunStart& start, std::vector<RunPlanCall>& calls);
    struct RunEnd {
        std::uint32_t last = 0;    // index in run_collectives_ of the run's last collective (0: no run)
        std::uint32_t chains = 0;  // chains of run_chains_ that belong to the run
        bool running = false;      // the last of them still runs when the last collective ends
    };
    RunEnd run_end(const OpListIndex& index, StreamId comm, std::uint32_t first) const;
    void checkpoint(std::uint32_t transfer, std::uint32_t index);
    void close_lockstep(std::uint32_t transfer);
    void phase_due(std::uint32_t transfer);
    void flow_due(FlowId flow, std::uint32_t version);
    void end_phase(std::uint32_t transfer);
    void finish_transfer(std::uint32_t transfer);
    void settle_network();  // FlowNetwork::settle(), then its completions scheduled
    void schedule_completions();
    void prefetch_ranks(std::span<const Rendezvous::Member> members, std::size_t from);
    [[noreturn]] void report_deadlock() const;
    void report_progress() const;  // SimOptions::progress

    const Program& program_;
    std::span<const RankProgram> rank_programs_;
    std::span<const Group> groups_;
    std::span<const std::uint64_t> rank_keys_;
    TransferPlanner& planner_;
    std::span<SimObserver* const> observers_;
    bool observe_ = false;
    std::span<const OpListIndex> indexes_;  // one per op list (EngineInput::indexes)
    std::vector<RankState> ranks_;
    std::vector<SlotRef> slot_refs_;
    EventQueue<Payload> queue_;
    // Events scheduled one after another for the same time, not yet in the queue (see schedule),
    // and the batches the queue holds such runs in.
    Time run_time_{0};
    std::vector<Payload> run_;
    std::vector<std::vector<Payload>> batches_;
    std::vector<std::uint32_t> free_batches_;
    FlowNetwork network_;
    Rendezvous rendezvous_;
    ExclusiveTransfers exclusive_;
    std::vector<LastPlan> last_plans_;    // per group
    std::vector<LastPlan> before_plans_;  // per group: the one before the last, if another
    std::vector<Transfer> transfers_;
    std::vector<std::uint32_t> free_transfers_;
    bool lockstep_ = false;  // SimOptions::lockstep_runs, and nothing observes
    Cancellation cancel_;    // SimOptions::cancel
    ProgressCallback progress_;  // SimOptions::progress
    std::uint64_t ops_total_ = 0;  // ops of all ranks
    std::uint64_t ops_done_ = 0;   // of which finished (the ranks' `remaining` summed the other way)
    std::vector<RunChain> run_chains_;            // scratch of plan_run
    std::vector<RunCollective> run_collectives_;
    std::vector<RunMemo> run_memos_;  // per op list
    // The last chain digested by ops_done per op list and stream: its head, end and digest. The
    // ranks of one op list that folding keeps apart often end the same chain at the same moment,
    // and a chain's digest is a function of the two alone (the ranks' keys multiply it after).
    struct ChainMemo {
        std::uint32_t head = 0xffffffffU;
        std::int64_t end = -1;
        std::uint64_t digest = 0;
    };
    std::vector<ChainMemo> chain_memos_;  // [op list * kMaxStreams + stream]
    Time now_{0};
    SimResult result_;
};

}  // namespace cuboid::sim
