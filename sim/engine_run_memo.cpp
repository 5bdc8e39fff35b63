// Reuse of a planned lockstep run (engine.hpp, RunMemo; docs/simulator.md, "Lockstep runs").
//
// Ranks that run one op list often start the same run at the same moment: the tensor groups of
// the data-parallel replicas of one pipeline stage that folding keeps apart (in the GPT-3 175B
// sweep, 7 runs in 8 repeat the one planned just before on their op list). Planning a run and
// digesting its chains is most of a lockstep run's cost, so the engine keeps the last run planned
// from each op list and reuses it when the new run provably plans the same way.
//
// What plan_run reads: the op list's index, the communication stream and the first collective's
// position (which fix every slot it looks at), the time now, the first collective's duration, and
// of the group only what plan_for and ExclusiveTransfers::holds answer for each later collective
// it considers (a shortcut that holds or not, its duration and flows). Everything else it does,
// and everything start_lockstep derives from it (run_end, the outcome), is a function of these.
// So when the position, time and first duration match, and the same plan_for calls give the same
// answers for the new group, the plan is the memo's, to the picosecond and the digest bit.
// The calls are made again, in plan_run's order, so the group's LastPlan ends as it would, but
// for a repeat: a call with the request of the call before it, which had the same outcome. Its
// plan_for would change nothing and return the plan just checked; when that plan's shortcut has
// no conditions, holds() is true whatever the op, so the outcome is the one just checked too.
// (A run's collectives mostly repeat one request: the all-reduces of one activation size.)
#include "sim/engine.hpp"

namespace cuboid::sim {

bool Engine::memo_holds(const RunMemo& memo, const RunStart& start) {
    if (memo.first != start.first || memo.stream != start.comm || memo.at != now_ ||
        memo.first_duration != start.first_duration) {
        return false;
    }
    const auto& comm = start.index.streams[start.comm];
    const LastPlan& last = last_plans_[start.group];
    for (const RunPlanCall& call : memo.calls) {
        if (call.repeat && last.shortcut && last.shortcut->first_condition == last.shortcut->last_condition) continue;
        const StreamSlot& c = comm[call.position];
        const LastPlan& plan = plan_for(start.group, c.kind(), c.bytes(), start.source);
        const bool ok = plan.shortcut && exclusive_.holds(*plan.shortcut, c.op);
        if (ok != call.ok) return false;
        if (ok && (plan.shortcut->duration != call.duration || plan.shortcut->flows != call.flows)) return false;
    }
    return true;
}

// Appends `call`, the outcome of plan_for for collective `call.position` of `comm`, marked as a
// repeat when the call before it asked the same request (kind and bytes: a run has one source)
// and had the same outcome.
void Engine::record_call(std::vector<RunPlanCall>& calls, std::span<const StreamSlot> comm, RunPlanCall call) {
    if (!calls.empty()) {
        const RunPlanCall& prev = calls.back();
        const StreamSlot& a = comm[prev.position];
        const StreamSlot& b = comm[call.position];
        call.repeat = a.kind() == b.kind() && a.bytes() == b.bytes() && prev.ok == call.ok &&
                      prev.duration == call.duration && prev.flows == call.flows;
    }
    calls.push_back(call);
}

}  // namespace cuboid::sim
