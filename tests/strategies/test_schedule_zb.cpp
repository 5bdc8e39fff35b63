// Zero-bubble ZB-H1 (Qi et al., ICLR 2024): its per-stage orders, its program in the simulator
// (dependencies, bubble, memory), against 1F1B on the same plan.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "sim/executor.hpp"
#include "sim/memory.hpp"
#include "sim/observer.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/schedule.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr Time kUnit{1000};

// One layer per stage, only the layers' GEMMs cost time (one unit each), communication is free:
// a stage's F takes 6 units, B 8 (six input-gradient GEMMs and the attention core's two key/value
// gradient GEMMs), W 4 (the four linears' weight gradients); 1F1B's combined backward 12.
Scenario pipeline(int p, int m, Schedule schedule) {
    Scenario sc = test::tiny_scenario(1, p, 1, m, p);
    sc.parallel.schedule = schedule;
    return sc;
}

sim::SimResult simulate_units(const Scenario& sc, sim::SimObserver* observer = nullptr) {
    const Layout l = validate_plan(sc);
    const sim::Program p = build_program(sc, l);
    test::FreePlanner planner;
    std::vector<sim::SimObserver*> observers;
    if (observer != nullptr) observers.push_back(observer);
    return sim::simulate(p, test::layer_gemm_costs(p, kUnit), {}, planner, observers);
}

// Micro-batches past F and not past B (1F1B's in-flight count), and past F and not past W.
struct InFlight {
    int until_b = 0, until_w = 0;
};
InFlight peak_in_flight(const std::vector<PipelineStep>& steps) {
    InFlight now, peak;
    for (const PipelineStep& s : steps) {
        if (s.pass == Pass::Forward) ++now.until_b, ++now.until_w;
        if (s.pass == Pass::Backward) --now.until_b;
        if (s.pass == Pass::WeightGrad) --now.until_w;
        peak.until_b = std::max(peak.until_b, now.until_b);
        peak.until_w = std::max(peak.until_w, now.until_w);
    }
    return peak;
}

// Per (stage, micro-batch): when its B ended (LayerNorm-1's backward of the stage's first layer,
// the last kernel of B) and when its first weight-gradient GEMM started.
class PassTimes : public sim::SimObserver {
public:
    explicit PassTimes(const TaggedProgram& tp) : tp_(tp) {}
    void compute_started(std::uint32_t rank, std::uint32_t op, Time t) override {
        if (label(rank, op).find(".wgrad") == std::string::npos || !linear(label(rank, op))) return;
        auto [it, fresh] = w_start.try_emplace(key(rank, op), t);
        if (!fresh) it->second = std::min(it->second, t);
    }
    void compute_finished(std::uint32_t rank, std::uint32_t op, Time t) override {
        if (label(rank, op) == "B.ln1") b_end[key(rank, op)] = t;  // layers back-propagate last to first
    }
    std::map<std::pair<int, int>, Time> b_end, w_start;

private:
    static bool linear(const std::string& l) {
        return l.rfind("B.qkv", 0) == 0 || l.rfind("B.proj", 0) == 0 || l.rfind("B.fc", 0) == 0;
    }
    const std::string& label(std::uint32_t rank, std::uint32_t op) const {
        return tp_.program.labels[tp_.program.op_lists[tp_.program.ranks[rank].op_list].ops[op].label];
    }
    std::pair<int, int> key(std::uint32_t rank, std::uint32_t op) const {
        const std::uint32_t list = tp_.program.ranks[rank].op_list;
        return {static_cast<int>(list), tp_.tags[list][op].micro};
    }
    const TaggedProgram& tp_;
};

}  // namespace

TEST_CASE("ZB-H1 order for p = 4, m = 8: 1F1B's F and B, stage s's W deferred by s micro-batches") {
    const std::vector<std::string> expected = {
        "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
        "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7",
    };
    for (int s = 0; s < 4; ++s) CHECK(step_words(stage_schedule(Schedule::ZeroBubbleH1, 4, 8, 1, s)) == expected[s]);
    CHECK(splits_backward(Schedule::ZeroBubbleH1));
    for (Schedule other : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved, Schedule::ShiftedCriticalPath})
        CHECK_FALSE(splits_backward(other));
}

TEST_CASE("ZB-H1: F before B before W per micro-batch, 1F1B's F/B order and in-flight count") {
    for (int p : {1, 2, 3, 4, 8})
        for (int m : {1, 2, 3, 5, 8, 16})
            for (int s = 0; s < p; ++s) {
                INFO("p " << p << " m " << m << " s " << s);
                const auto zb = stage_schedule(Schedule::ZeroBubbleH1, p, m, 1, s);
                const auto base = stage_schedule(Schedule::OneFOneB, p, m, 1, s);
                std::vector<PipelineStep> without_w;
                std::map<int, int> state;  // 0 none, 1 forwarded, 2 input gradient, 3 weight gradient
                int last_w = -1;
                for (const PipelineStep& st : zb) {
                    int& x = state[st.micro];
                    const int expect = st.pass == Pass::Forward ? 0 : (st.pass == Pass::Backward ? 1 : 2);
                    CHECK(x == expect);
                    x = expect + 1;
                    if (st.pass == Pass::WeightGrad) CHECK(st.micro == ++last_w);  // W in micro-batch order
                    else without_w.push_back(st);
                }
                CHECK(zb.size() == static_cast<std::size_t>(3 * m));
                for (int k = 0; k < m; ++k) CHECK(state[k] == 3);
                CHECK(step_words(without_w) == step_words(base));
                const InFlight peak = peak_in_flight(zb);
                CHECK(peak.until_b == std::min(p - s, m));  // 1F1B's
                CHECK(peak.until_w <= std::min(p, m));      // 1F1B's first stage
            }
}

TEST_CASE("ZB-H1 in the simulator: B of stage s after B of stage s + 1, W after its B") {
    for (int p : {2, 4})
        for (int m : {3, 8}) {
            INFO("p " << p << " m " << m);
            const Scenario sc = pipeline(p, m, Schedule::ZeroBubbleH1);
            const TaggedProgram tp = build_tagged_program(sc, validate_plan(sc));
            PassTimes times(tp);
            test::FreePlanner planner;
            std::vector<sim::SimObserver*> observers{&times};
            sim::simulate(tp.program, test::layer_gemm_costs(tp.program, kUnit), {}, planner, observers);
            REQUIRE(times.b_end.size() == static_cast<std::size_t>(p * m));
            REQUIRE(times.w_start.size() == static_cast<std::size_t>(p * m));
            for (int s = 0; s < p; ++s)
                for (int k = 0; k < m; ++k) {
                    CHECK(times.w_start.at({s, k}) >= times.b_end.at({s, k}));
                    if (s + 1 < p) CHECK(times.b_end.at({s, k}) > times.b_end.at({s + 1, k}));
                }
        }
}

TEST_CASE("ZB-H1's iteration is never longer than 1F1B's, shorter with p >= 4 and m >= 2p") {
    for (int p : {2, 3, 4, 8})
        for (int m : {1, 2, 3, 4, 7, 8, 16}) {
            INFO("p " << p << " m " << m);
            const Time one = simulate_units(pipeline(p, m, Schedule::OneFOneB)).makespan;
            const Time zb = simulate_units(pipeline(p, m, Schedule::ZeroBubbleH1)).makespan;
            CHECK(one.value == (m + p - 1) * 18 * kUnit.value);  // (m + p - 1)(T_F + T_B + T_W)
            CHECK(zb.value <= one.value);
            if (p >= 4 && m >= 2 * p) CHECK(zb.value < one.value);
            // The paper's ZB-H1 iteration (§3.1): m (T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W).
            if (m >= p) CHECK(zb.value == (18 * m + 10 * (p - 1)) * kUnit.value);
        }
}

TEST_CASE("ZB-H1 holds no more activation memory than 1F1B's most loaded stage") {
    for (int p : {2, 4})
        for (int m : {2, 8}) {
            INFO("p " << p << " m " << m);
            const auto peaks = [&](Schedule s) {
                const Scenario sc = pipeline(p, m, s);
                const sim::Program prog = build_program(sc, validate_plan(sc));
                std::vector<double> out;
                for (const auto& list : prog.op_lists) out.push_back(sim::peak_memory(list).peak.value);
                return out;
            };
            const std::vector<double> one = peaks(Schedule::OneFOneB), zb = peaks(Schedule::ZeroBubbleH1);
            CHECK(zb[0] == Approx(one[0]).epsilon(1e-12));  // stage 0 runs each W right after its B
            for (int s = 1; s < p; ++s) {
                CHECK(zb[s] >= one[s]);  // pending W passes keep their GEMM inputs
                CHECK(zb[s] <= one[0] * (1 + 1e-12));
            }
            if (m >= p) CHECK(zb[p - 1] > one[p - 1]);
        }
}

TEST_CASE("ZB-H1: no deadlock with tensor, sequence and data parallelism, ZeRO and every recompute policy") {
    const Recompute policies[] = {Recompute::None, Recompute::Full, Recompute::Selective, Recompute::StageAware};
    for (int p : {2, 3, 4})
        for (int m = 1; m <= 9; m += 2) {
            Scenario sc = test::tiny_scenario(2, p, 2, m, 8);
            sc.parallel.schedule = Schedule::ZeroBubbleH1;
            sc.parallel.recompute = policies[(m / 2) % 4];
            sc.parallel.sequence_parallel = m % 3 == 0;
            sc.parallel.zero_stage = (m + p) % 4;
            sc.parallel.dp_overlap = p != 3;
            sc.parallel.tp_backward_overlap = m != 5;
            INFO("p " << p << " m " << m);
            sim::SimResult r;
            REQUIRE_NOTHROW(r = simulate_units(sc));
            CHECK(r.makespan.value > 0);
        }
}

namespace {

// A V schedule's order of one stage (chunk 0 is model chunk s, chunk 1 model chunk 2p-1-s):
// each (micro-batch, chunk) runs F, B, W once, in that order; chunk 0 forward before chunk 1,
// chunk 1 backward before chunk 0; each chunk's W passes in micro-batch order. Returns the most
// chunk passes held between F and W.
int check_v_order(const std::vector<PipelineStep>& steps, int m) {
    CHECK(steps.size() == static_cast<std::size_t>(6 * m));
    std::map<std::pair<int, int>, int> state;
    std::array<int, 2> last_w{-1, -1};
    int in_flight = 0, peak = 0;
    for (const PipelineStep& st : steps) {
        int& x = state[{st.micro, st.chunk}];
        const int expect = st.pass == Pass::Forward ? 0 : (st.pass == Pass::Backward ? 1 : 2);
        CHECK(x == expect);
        x = expect + 1;
        // The model runs chunk 0 then chunk 1 forward, chunk 1 then chunk 0 backward.
        if (st.pass == Pass::Forward && st.chunk == 1) CHECK(state[{st.micro, 0}] >= 1);
        if (st.pass == Pass::Backward && st.chunk == 0) CHECK(state[{st.micro, 1}] >= 2);
        if (st.pass == Pass::WeightGrad) CHECK(st.micro == ++last_w[static_cast<std::size_t>(st.chunk)]);
        in_flight += st.pass == Pass::Forward ? 1 : (st.pass == Pass::WeightGrad ? -1 : 0);
        peak = std::max(peak, in_flight);
    }
    for (const auto& [key, x] : state) CHECK(x == 3);
    return peak;
}

// A V schedule on p stages with m micro-batches, tensor 2 (sequence parallel for m divisible by
// 3), data 2, recompute and ZeRO stage varying with p and m, simulates to the end.
void simulates_v_plan(Schedule schedule, int p, int m) {
    Scenario sc = test::tiny_scenario(2, p, 2, m, 8);
    sc.parallel.schedule = schedule;
    sc.parallel.virtual_stages = 2;
    sc.parallel.recompute = m % 4 == 1 ? Recompute::Full : Recompute::Selective;
    sc.parallel.sequence_parallel = m % 3 == 0;
    sc.parallel.zero_stage = (m + p) % 4;
    INFO(to_string(schedule) << " p " << p << " m " << m);
    sim::SimResult r;
    REQUIRE_NOTHROW(r = simulate_units(sc));
    CHECK(r.makespan.value > 0);
}

}  // namespace

// ZB-V (Qi et al. §6): chunk 0 is model chunk s, chunk 1 model chunk 2p-1-s.
TEST_CASE("ZB-V: each (micro-batch, chunk) runs F, B, W; at most 2p chunk passes in flight") {
    for (int p : {1, 2, 3, 4, 8})
        for (int m : {1, 2, 3, 5, 8, 16})
            for (int s = 0; s < p; ++s) {
                INFO("p " << p << " m " << m << " s " << s);
                // p micro-batches of the stage's layers: 1F1B's first stage
                CHECK(check_v_order(stage_schedule(Schedule::ZeroBubbleV, p, m, 2, s), m) <= 2 * p);
            }
}

// DualPipeV (deepseek-ai/DualPipe, dualpipev.py): the reference's eight steps, and their memory.
TEST_CASE("DualPipeV: the reference order; each (micro-batch, chunk) runs F, B, W; 2p+1 chunk passes in flight") {
    // p = 2, m = 4, written out from DualPipeV.step: stage 0 runs steps 1 (F F), 2 (F F), 3
    // (B with W deferred, W, F), 4 (F, B W, F, B W), 5 (B W, F, B W), 6 (B W, B deferred), 7
    // (W, B deferred), 8 (W); stage 1 has no step 1, 3, 5 or 7.
    const std::array<std::string, 2> expected = {
        "F0.0 F1.0 F2.0 F0.1 B0.1 W0.1 F1.1 F3.0 B1.1 W1.1 F2.1 B0.0 W0.0 B2.1 W2.1 F3.1 B1.0 W1.0 B3.1 W3.1 "
        "B2.0 W2.0 B3.0 W3.0",
        "F0.0 F0.1 F1.0 F1.1 F2.0 B0.1 W0.1 F2.1 B0.0 W0.0 F3.0 B1.1 W1.1 F3.1 B1.0 W1.0 B2.1 W2.1 B2.0 W2.0 "
        "B3.1 B3.0 W3.1 W3.0"};
    for (int s = 0; s < 2; ++s) CHECK(step_words(stage_schedule(Schedule::DualPipeV, 2, 4, 2, s), true) == expected[s]);
    CHECK(splits_backward(Schedule::DualPipeV));
    for (int p : {1, 2, 3, 4, 8})
        for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p + 3})
            for (int s = 0; s < p; ++s) {
                INFO("p " << p << " m " << m << " s " << s);
                // DualPipe's PP + 1 (DeepSeek-V3 report, Table 2), in chunk passes of half a stage.
                CHECK(check_v_order(stage_schedule(Schedule::DualPipeV, p, m, 2, s), m) == 2 * p + 1);
            }
}

TEST_CASE("ZB-V in the simulator: shorter than 1F1B on the same plan, peak memory within 1F1B's") {
    for (int p : {2, 4})
        for (int m : {2 * p, 4 * p}) {
            INFO("p " << p << " m " << m);
            Scenario zb = test::tiny_scenario(1, p, 1, m, 2 * p);  // one layer per chunk
            zb.parallel.schedule = Schedule::ZeroBubbleV;
            zb.parallel.virtual_stages = 2;
            Scenario one = test::tiny_scenario(1, p, 1, m, 2 * p);
            const Time zb_time = simulate_units(zb).makespan, one_time = simulate_units(one).makespan;
            CHECK(zb_time.value < one_time.value);
            // Each stage computes 2 layers: 36 units per micro-batch; no more than p - 1 of them idle.
            CHECK(zb_time.value <= (36 * m + 36 * (p - 1)) * kUnit.value);
            // Activations (the peak above the resident state): ZB-V's first stage holds both the
            // embedding's and the output layer's, which 1F1B splits between its first and last stage.
            const auto peak = [](const Scenario& sc) {
                const sim::Program prog = build_program(sc, validate_plan(sc));
                double most = 0.0;
                for (const auto& list : prog.op_lists)
                    most = std::max(most, sim::peak_memory(list).peak.value - list.resident.value);
                return most;
            };
            // At most the output layer's fp32 logits and their gradient (b s V 4 bytes each) more.
            const double logits = 2.0 * 32 * 128 * 4;
            CHECK(peak(zb) <= peak(one) + logits);
            CHECK(peak(zb) > peak(one) / 2);  // the model's layers in flight are 1F1B's, not fewer
        }
}

TEST_CASE("DualPipeV in the simulator: shorter than 1F1B on the same plan; its plan rules; no deadlock") {
    for (int p : {2, 4})
        for (int m : {2 * p, 4 * p}) {
            INFO("p " << p << " m " << m);
            Scenario dual = test::tiny_scenario(1, p, 1, m, 2 * p);  // one layer per chunk
            dual.parallel.schedule = Schedule::DualPipeV;
            dual.parallel.virtual_stages = 2;
            Scenario one = test::tiny_scenario(1, p, 1, m, 2 * p);
            const Time dual_time = simulate_units(dual).makespan, one_time = simulate_units(one).makespan;
            CHECK(dual_time.value < one_time.value);
            // Each stage computes 2 layers: 36 units per micro-batch. The reference's bubble for p
            // devices, (p - 1)(F&B + B - 3W) (deepseek-ai/DualPipe README, PP = 2p stages), with a
            // chunk's F 6, full backward B 12, W 4 and the pair F&B not overlapped (18): 18 (p - 1).
            CHECK(dual_time.value <= (36 * m + 18 * (p - 1)) * kUnit.value);
        }
    Scenario one_chunk = test::tiny_scenario(1, 2, 1, 4, 8);
    one_chunk.parallel.schedule = Schedule::DualPipeV;
    CHECK_THROWS_WITH(validate_plan(one_chunk), Catch::Contains("virtual_stages: 2"));
    Scenario few = test::tiny_scenario(1, 4, 1, 7, 8);  // 7 micro-batches on 4 stages
    few.parallel.schedule = Schedule::DualPipeV;
    few.parallel.virtual_stages = 2;
    CHECK(test::rejected_key(few, [](Scenario&) {}) == "training.global_batch");
    CHECK_THROWS_WITH(validate_plan(few), Catch::Contains("at least 2 x pipeline = 8 micro-batches"));
    for (int p : {1, 2, 4})
        for (int m = 2 * p; m <= 2 * p + 5; m += 2) simulates_v_plan(Schedule::DualPipeV, p, m);
}

TEST_CASE("ZB-V: needs two chunks per stage; no deadlock with tensor, sequence and data parallelism") {
    Scenario one_chunk = test::tiny_scenario(1, 2, 1, 4, 8);
    one_chunk.parallel.schedule = Schedule::ZeroBubbleV;
    CHECK_THROWS_WITH(validate_plan(one_chunk), Catch::Contains("virtual_stages: 2"));
    for (int p : {1, 2, 3, 4})
        for (int m = 1; m <= 9; m += 2) simulates_v_plan(Schedule::ZeroBubbleV, p, m);
}
