// Executes a priced program as discrete events: streams per rank, rendezvous of communication
// instances across ranks, flows sharing links max-min fairly.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cancellation.hpp"
#include "sim/memory.hpp"
#include "sim/observer.hpp"
#include "sim/program.hpp"
#include "sim/progress.hpp"
#include "sim/transfer.hpp"
#include "sim/units.hpp"

namespace cuboid::sim {

// The priced program: duration of every compute op, per OpList (communication entries unused).
struct ProgramCosts {
    std::vector<std::vector<Time>> durations;
};

// Time of one rank split by what it was doing on its compute stream, so that the parts add up
// to its finish time: busy time per category, and idle time charged to the communication class
// that was moving data while the compute stream waited (else to the bubble).
struct RankBreakdown {
    Time compute{0};
    Time recompute{0};
    std::array<Time, kMaxCommClasses> comm_exposed{};  // per class of Program::comm_classes
    Time bubble{0};
};

struct RankOutcome {
    Time finish{0};  // when the rank's last op ended
    RankBreakdown breakdown;
};

struct SimResult {
    Time makespan{0};                 // the iteration time: the last finish of any rank
    std::vector<RankOutcome> ranks;
    std::uint64_t events = 0;         // events taken from the queue
    std::uint64_t flows = 0;          // flows started on the network
    std::uint64_t fingerprint = 0;    // hash over (time, rank, op) of every op completion
    bool folded = false;              // the run was symmetry-folded (SimOptions::fold)
    double fold_factor = 1.0;         // ranks per simulated rank (1: every rank simulated)
    // Per op list of the program: op_list_totals (memory peak, GEMM FLOPs), which the run's
    // indexing pass reads off the ops as it goes, so that its caller need not walk them again.
    std::vector<OpListTotals> op_list_totals;
};

// A program that cannot finish: ops wait for partners that never come.
class DeadlockError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct SimOptions {
    // Run consecutive compute ops of a stream that nothing else waits on as one event. It changes
    // no time (they run back to back either way); observers still see every op.
    bool merge_compute_chains = true;
    // Symmetry folding (docs/simulator.md, sim/fold.hpp): simulate one rank per orbit of ranks
    // whose timelines are provably identical, on the quotient network. The caller proposes rank
    // permutations (rank r -> generator[r]); sim verifies that each maps the program and the
    // network onto themselves and falls back to the full simulation when any check fails, or when
    // there are observers. Results are those of the full simulation; `events` counts the events
    // actually taken.
    bool fold = false;
    // Run a transfer whose links no concurrent transfer can use as one event, with the duration
    // the network would compute (sim/exclusive.hpp). It changes no time; only fewer events.
    bool exclusive_transfers = true;
    // Run a lockstep run of exclusive collectives of a lockstep class (CommClass::lockstep) and
    // the compute chains between them (sim/op_list_index.hpp) as one event, with the times it
    // would have step by step. It changes no time; only fewer events. Needs exclusive_transfers,
    // and is off under observers.
    bool lockstep_runs = true;
    std::vector<std::vector<std::uint32_t>> fold_generators;
    // Polled every few thousand events: once requested, simulate() throws Cancelled within
    // milliseconds instead of running to the end (a sweep stopped by a signal).
    Cancellation cancel;
    // Set: told how far the run has got every few thousand events and once at its end
    // (progress.hpp); it changes nothing that is simulated.
    ProgressCallback progress;
};

SimResult simulate(const Program& program, const ProgramCosts& costs, std::span<const Link> links,
                   TransferPlanner& planner, std::span<SimObserver* const> observers = {},
                   const SimOptions& options = {});

}  // namespace cuboid::sim
