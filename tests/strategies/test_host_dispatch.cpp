// The host dispatch transformation (strategies/host_dispatch.hpp): its ops and dependencies, and
// the iteration times it implies, derived by hand for chains of small and large kernels and for
// each synchronising point.
#include <catch2/catch.hpp>

#include "sim/executor.hpp"
#include "strategies/host_dispatch.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "tests/sim/sim_test_support.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;
using sim::test::TestProgram;

namespace {

constexpr std::int64_t kUs = 1'000'000;  // picoseconds per microsecond

hw::HostDispatchCosts host_costs(Time h, bool sync_optimizer = false, bool sync_pipeline = false) {
    hw::HostDispatchCosts c;
    c.compute = h;
    c.communication = h;
    c.sync_optimizer = sync_optimizer;
    c.sync_pipeline = sync_pipeline;
    return c;
}

// The costs of a transformed program: each op keeps the duration it had, each dispatch op costs
// h (the hardware model's pricing is tested in tests/hardware_models/test_profile_host.cpp).
sim::ProgramCosts costs_with_host(const sim::Program& p, const sim::ProgramCosts& before, Time h) {
    sim::ProgramCosts c;
    for (std::size_t l = 0; l < p.op_lists.size(); ++l) {
        auto& d = c.durations.emplace_back();
        std::size_t original = 0;
        for (const sim::Op& op : p.op_lists[l].ops)
            d.push_back(op.kind == sim::OpKind::HostDispatch ? h : before.durations[l][original++]);
    }
    return c;
}

Time makespan(const sim::Program& p, const sim::ProgramCosts& c, sim::TransferPlanner& planner) {
    return sim::simulate(p, c, {}, planner).makespan;
}

// One rank running n compute ops of g each, one after the other on the compute stream.
TestProgram chain(int n, Time g) {
    TestProgram t;
    name_streams_and_classes(t.program);  // the strategies' classes, not the sim tests'
    const auto list = t.add_list();
    for (int i = 0; i < n; ++i) t.compute(list, "k", g);
    t.rank(list);
    return t;
}

Time chain_time(int n, Time g, Time h) {
    TestProgram t = chain(n, g);
    const sim::Program p = with_host_dispatch(t.program, host_costs(h));
    sim::test::TablePlanner planner;
    return makespan(p, costs_with_host(p, t.costs, h), planner);
}

}  // namespace

TEST_CASE("host dispatch: one dispatch op before every op, and the op waits for it", "[host]") {
    TestProgram t;
    name_streams_and_classes(t.program);  // the strategies' classes, not the sim tests'
    const auto list = t.add_list();
    const auto a = t.compute(list, "a", Time(5));
    const auto send = t.comm(list, sim::OpKind::Send, "send", 0, Bytes(8), stream::kPipelineSend,
                             comm_class::kPipeline, {a});
    t.compute(list, "b", Time(5), stream::kCompute, sim::OpCategory::Recompute, {send});
    t.rank(list);
    const sim::Program p = with_host_dispatch(t.program, host_costs(Time(1)));
    const sim::OpList& out = p.op_lists[0];
    REQUIRE(out.ops.size() == 6);  // 3 ops, each preceded by its dispatch
    for (std::uint32_t i = 0; i < 3; ++i) {
        const sim::Op& h = out.ops[2 * i];
        const sim::Op& op = out.ops[2 * i + 1];
        CHECK(h.kind == sim::OpKind::HostDispatch);
        CHECK(h.stream == stream::kHost);
        CHECK(h.label == op.label);        // printed with the op it issues
        CHECK(h.category == op.category);  // communication dispatch is priced as such
        CHECK(h.dep_count == 0);           // no sync point: the host never waits for the GPU
        REQUIRE(op.dep_count >= 1);
        CHECK(out.deps[op.first_dep] == 2 * i);  // the op waits for its own dispatch
        CHECK(op.kind == t.program.op_lists[0].ops[i].kind);
    }
    // The original dependencies follow the ops to their new indices: send on a, b on send.
    CHECK(out.ops[3].dep_count == 2);
    CHECK(out.deps[out.ops[3].first_dep + 1] == 1);
    CHECK(out.deps[out.ops[5].first_dep + 1] == 3);
    CHECK(p.labels == t.program.labels);
    CHECK(p.ranks.size() == t.program.ranks.size());
}

TEST_CASE("host dispatch: tiny kernels are bound by the host, long ones by the GPU", "[host]") {
    const int n = 10;
    // g < h: the host issues op k at k*h (k = 1..n), the GPU finishes it g later and is idle
    // until the next issue, so the last op ends at n*h + g.
    const Time h{50 * kUs}, tiny{5 * kUs};
    CHECK(chain_time(n, tiny, h) == Time(n * h.value + tiny.value));
    // g > h: only the first op waits for the host (h), then the GPU runs back to back: h + n*g.
    const Time long_kernel{200 * kUs};
    CHECK(chain_time(n, long_kernel, h) == Time(h.value + n * long_kernel.value));
    // Without host time nothing changes: n*g.
    CHECK(chain_time(n, long_kernel, Time(0)) == Time(n * long_kernel.value));
}

TEST_CASE("host dispatch: the optimizer's .item() makes the host wait for the device", "[host]") {
    // A (g) then the optimizer O (g). Without the sync the host issues O at 2h < h + g, so O runs
    // right after A: h + 2g. With it the host starts O's dispatch only when A has ended (h + g)
    // and O starts one dispatch later: 2h + 2g, h more.
    const Time h{30 * kUs}, g{100 * kUs};
    TestProgram t;
    name_streams_and_classes(t.program);  // the strategies' classes, not the sim tests'
    const auto list = t.add_list();
    t.compute(list, "a", g);
    t.compute(list, "opt", g);
    t.program.op_lists[0].ops[1].kind = sim::OpKind::Optimizer;
    t.rank(list);
    sim::test::TablePlanner planner;
    const sim::Program free_running = with_host_dispatch(t.program, host_costs(h, false));
    const sim::Program synced = with_host_dispatch(t.program, host_costs(h, true));
    CHECK(synced.op_lists[0].ops[2].dep_count == 1);  // O's dispatch waits for A
    CHECK(makespan(free_running, costs_with_host(free_running, t.costs, h), planner) == Time(h.value + 2 * g.value));
    CHECK(makespan(synced, costs_with_host(synced, t.costs, h), planner) == Time(2 * h.value + 2 * g.value));
}

TEST_CASE("host dispatch: after a pipeline receive the host waits for the message", "[host]") {
    // Rank 0: A (g), Send. Rank 1: Recv, B (g), C (g). The transfer takes T once both are posted.
    // Rank 0 sends at max(h + g, 2h) = h + g; the message is there at h + g + T.
    // Free-running host: B and C were issued long before, so rank 1 ends at h + 3g + T.
    // Synced: B's dispatch starts at h + g + T, B runs at 2h + g + T, C (issued at 3h + g + T,
    // before B ends since g > h) follows B: 2h + 3g + T, one dispatch time h later.
    const Time h{20 * kUs}, g{100 * kUs}, transfer{40 * kUs};
    TestProgram t;
    name_streams_and_classes(t.program);  // the strategies' classes, not the sim tests'
    const auto sender = t.add_list(), receiver = t.add_list();
    const auto a = t.compute(sender, "a", g);
    t.comm(sender, sim::OpKind::Send, "send", 0, Bytes(8), stream::kPipelineSend, comm_class::kPipeline,
           {a});
    const auto recv = t.comm(receiver, sim::OpKind::Recv, "recv", 0, Bytes(8), stream::kPipelineRecv,
                             comm_class::kPipeline);
    t.compute(receiver, "b", g, stream::kCompute, sim::OpCategory::Compute, {recv});
    t.compute(receiver, "c", g);
    const auto group = t.group({0, 1}, "pp");
    t.rank(sender, {group});
    t.rank(receiver, {group});
    sim::test::TablePlanner planner;
    planner.plans[group].phases.push_back(sim::TransferPhase{transfer, {}});
    const auto run = [&](bool sync) {
        const sim::Program p = with_host_dispatch(t.program, host_costs(h, false, sync));
        return makespan(p, costs_with_host(p, t.costs, h), planner);
    };
    CHECK(run(false) == Time(h.value + 3 * g.value + transfer.value));
    CHECK(run(true) == Time(2 * h.value + 3 * g.value + transfer.value));
}

namespace {

// The dependencies of the dispatch ops that follow a pipeline receive (the synchronisation's wait
// set) that are pipeline sends, over every op list.
int synced_sends(const sim::Program& p) {
    int sends = 0;
    for (const sim::OpList& list : p.op_lists)
        for (std::size_t i = 2; i < list.ops.size(); ++i) {
            const sim::Op& h = list.ops[i];
            if (h.kind != sim::OpKind::HostDispatch || list.ops[i - 1].kind != sim::OpKind::Recv) continue;
            for (std::uint32_t d = h.first_dep; d < h.first_dep + h.dep_count; ++d) {
                const sim::StreamId s = list.ops[list.deps[d]].stream;
                if (s == stream::kPipelineSend || s == stream::kPipelineSendBack) ++sends;
            }
        }
    return sends;
}

}  // namespace

TEST_CASE("host dispatch: the pipeline synchronisation runs every schedule to its end", "[host]") {
    // Four stages, eight micro-batches, GEMMs priced, communication free, dispatch 20 us. With one chunk per stage the
    // synchronisation after a receive waits for the sends issued before it (Megatron's calls); with
    // two (interleaved, ZB-V) it leaves them to their stream, without which the ring of sends
    // deadlocks (every rank waits for a send whose peer posts its receive only after its own wait).
    const Schedule schedule = GENERATE(Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved,
                                       Schedule::ShiftedCriticalPath, Schedule::ZeroBubbleH1, Schedule::ZeroBubbleV);
    Scenario sc = test::cluster_scenario(1, 4, 1, 1, schedule);
    sc.training.global_batch = 8;  // two micro-batches per stage: a steady state after the warm-up
    if (schedule == Schedule::ZeroBubbleV) sc.parallel.virtual_stages = 2;
    if (schedule == Schedule::ShiftedCriticalPath) sc.parallel.recompute = Recompute::Full;
    const sim::Program program = build_program(sc, validate_plan(sc));
    const PipelineChunks chunks = pipeline_chunks(sc.parallel);
    CHECK((chunks == PipelineChunks::Several) == (sc.parallel.virtual_stages > 1));
    const sim::ProgramCosts before = test::layer_gemm_costs(program, Time(100 * kUs));
    const Time h{20 * kUs};
    test::FreePlanner planner;
    const sim::Program free_running = with_host_dispatch(program, host_costs(h, false, false), chunks);
    const sim::Program synced = with_host_dispatch(program, host_costs(h, false, true), chunks);
    const Time t_free = makespan(free_running, costs_with_host(free_running, before, h), planner);
    Time t_synced{0};
    REQUIRE_NOTHROW(t_synced = makespan(synced, costs_with_host(synced, before, h), planner));
    CHECK(t_synced >= t_free);  // the host only waits more
    if (chunks == PipelineChunks::One) {
        CHECK(synced_sends(synced) > 0);
    } else {
        CHECK(synced_sends(synced) == 0);
        const sim::Program waiting_for_sends = with_host_dispatch(program, host_costs(h, false, true));
        CHECK_THROWS_AS(makespan(waiting_for_sends, costs_with_host(waiting_for_sends, before, h), planner),
                        sim::DeadlockError);
    }
}
