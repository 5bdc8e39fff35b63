#include "strategies/schedule_kinds.hpp"

#include <algorithm>
#include <string>

#include "hardware_models/table_row.hpp"

namespace cuboid {
namespace {

using std::to_string;

std::vector<PipelineStep> gpipe(int m) {
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(2 * m));
    for (int i = 0; i < m; ++i) out.push_back({Pass::Forward, i, 0});
    for (int i = m - 1; i >= 0; --i) out.push_back({Pass::Backward, i, 0});
    return out;
}

// Chunked 1F1B: forward and backward number k map to (micro, chunk) through fwd/bwd; with v = 1
// and warm-up min(p-s-1, m) this is plain 1F1B.
template <class Fwd, class Bwd>
std::vector<PipelineStep> one_f_one_b(int total, int warmup, Fwd fwd, Bwd bwd) {
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(2 * total));
    for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
    for (int k = 0; k < total - warmup; ++k) {
        out.push_back(fwd(warmup + k));
        out.push_back(bwd(k));
    }
    for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
    return out;
}

std::vector<PipelineStep> gpipe_order(int, int m, int, int) { return gpipe(m); }

std::vector<PipelineStep> one_f_one_b_order(int p, int m, int, int stage) {
    const auto f = [](int k) { return PipelineStep{Pass::Forward, k, 0}; };
    const auto b = [](int k) { return PipelineStep{Pass::Backward, k, 0}; };
    return one_f_one_b(m, std::min(p - stage - 1, m), f, b);
}

// Megatron's interleaved order: forward k runs chunk (k / p) % v on micro-batch (k / (p v)) p + k % p,
// warm-up min(m v, 2 (p-s-1) + (v-1) p), then 1F1B; backwards visit chunks in reverse.
std::vector<PipelineStep> interleaved_order(int p, int m, int v, int stage) {
    const auto micro = [p, v](int k) { return (k / (p * v)) * p + k % p; };
    const auto f = [=](int k) { return PipelineStep{Pass::Forward, micro(k), (k / p) % v}; };
    const auto b = [=](int k) { return PipelineStep{Pass::Backward, micro(k), v - 1 - (k / p) % v}; };
    const int total = m * v;
    return one_f_one_b(total, std::min(total, 2 * (p - stage - 1) + (v - 1) * p), f, b);
}

std::vector<PipelineStep> scp_order(int p, int m, int, int stage) { return scp_stage_schedule(p, m, stage); }
std::vector<PipelineStep> zb_h1_order(int p, int m, int, int stage) { return zb_h1_stage_schedule(p, m, stage); }
std::vector<PipelineStep> zb_v_order(int p, int m, int, int stage) { return zb_v_stage_schedule(p, m, stage); }
std::vector<PipelineStep> dualpipev_order(int p, int m, int, int stage) { return dualpipev_stage_schedule(p, m, stage); }

// One model chunk per stage: the schedules without virtual stages.
void one_chunk(const PlanChecker& c, const Scenario& sc, int) {
    c.require(sc.parallel.virtual_stages == 1, "parallel.virtual_stages",
              "virtual stages > 1 need schedule: interleaved (or zb-v, with 2)");
}

void check_interleaved(const PlanChecker& c, const Scenario& sc, int micro_batches) {
    const ParallelPlan& p = sc.parallel;
    c.require(p.virtual_stages > 1, "parallel.virtual_stages",
              "the interleaved schedule needs virtual_stages > 1 (use 1f1b for 1)");
    c.require(p.pipeline > 1, "parallel.pipeline", "the interleaved schedule needs pipeline > 1");
    c.require(micro_batches % p.pipeline == 0, "training.global_batch",
              "the interleaved schedule needs micro-batches (" + to_string(micro_batches) +
                  ") to be a multiple of pipeline " + to_string(p.pipeline));
}

void check_scp(const PlanChecker& c, const Scenario& sc, int micro_batches) {
    one_chunk(c, sc, micro_batches);
    const ParallelPlan& p = sc.parallel;
    if (const auto why = scp_unsupported_reason(p.pipeline, micro_batches)) c.require(false, "parallel.schedule", *why);
    c.require(p.recompute == Recompute::Full || p.recompute == Recompute::StageAware, "parallel.recompute",
              "shifted-critical-path pre-recomputes checkpointed micro-batches in the bubbles, so it needs "
              "recompute: full or stage-aware (got " + to_string(p.recompute) + ")");
}

void check_zb_v(const PlanChecker& c, const Scenario& sc, int) {
    c.require(sc.parallel.virtual_stages == 2, "parallel.virtual_stages",
              "zb-v places two model chunks on each stage, in a V: it needs virtual_stages: 2");
}

void check_dualpipev(const PlanChecker& c, const Scenario& sc, int micro_batches) {
    c.require(sc.parallel.virtual_stages == 2, "parallel.virtual_stages",
              "dualpipev places two model chunks on each stage, in a V: it needs virtual_stages: 2");
    // DualPipeV.step asserts num_chunks >= num_ranks * 2: its steady phase needs that many.
    c.require(micro_batches >= 2 * sc.parallel.pipeline, "training.global_batch",
              "dualpipev needs at least 2 x pipeline = " + to_string(2 * sc.parallel.pipeline) +
                  " micro-batches per pipeline (got " + to_string(micro_batches) + ")");
}

// Micro-batches a stage holds at its peak: all m under GPipe; min(p-s, m) under 1F1B and SCP; the
// interleaved warm-up plus the forward before the first backward, at most all m v chunk passes,
// spread over the stage's v chunks.
double all_micro_batches(int, int m, int, int) { return m; }
double one_f_one_b_in_flight(int p, int m, int, int stage) { return std::min(p - stage, m); }
double interleaved_in_flight(int p, int m, int v, int stage) {
    const int warmup = std::min(m * v, 2 * (p - stage - 1) + (v - 1) * p);
    return std::min(m * v, warmup + 1) / static_cast<double>(v);
}
// ZB-H1: an upper bound, 1F1B's p-s plus the s whose W is pending, counted whole (they keep only
// the inputs of their weight-gradient GEMMs). ZB-V: the 2p chunk passes a stage holds at most
// (Qi et al. §6), half on each of its two chunks.
double first_stage_in_flight(int p, int m, int, int) { return std::min(p, m); }
// DualPipeV: the most chunk passes its own order holds between F and W, over its two chunks.
double dualpipev_in_flight(int p, int m, int, int stage) {
    int held = 0, most = 0;
    for (const PipelineStep& st : dualpipev_stage_schedule(p, m, stage)) {
        held += st.pass == Pass::Forward ? 1 : (st.pass == Pass::WeightGrad ? -1 : 0);
        most = std::max(most, held);
    }
    return most / 2.0;
}

constexpr ScheduleKind kSchedules[] = {
    {Schedule::GPipe, "gpipe", "all forwards, then all backwards (Huang et al. 2019)", gpipe_order, one_chunk, 1,
     all_micro_batches},
    {Schedule::OneFOneB, "1f1b", "one-forward-one-backward, PipeDream-Flush (Narayanan et al. 2021)",
     one_f_one_b_order, one_chunk, 1, one_f_one_b_in_flight},
    {Schedule::Interleaved, "interleaved", "1F1B over virtual stages (Megatron, Narayanan et al. SC'21)",
     interleaved_order, check_interleaved, 0, interleaved_in_flight},
    {Schedule::ShiftedCriticalPath, "shifted-critical-path",
     "Merak's shifted critical path (Lai et al. 2023): pre-recompute in the bubbles; needs recompute full or "
     "stage-aware",
     scp_order, check_scp, 1, one_f_one_b_in_flight, false, false, true},
    {Schedule::ZeroBubbleH1, "zb-h1",
     "zero bubble H1 (Qi et al. ICLR 2024): backward split into input- and weight-gradient passes, weight gradients "
     "deferred into the bubbles; 1F1B's activation memory",
     zb_h1_order, one_chunk, 1, first_stage_in_flight, true},
    {Schedule::ZeroBubbleV, "zb-v",
     "zero bubble V (Qi et al. ICLR 2024): two model chunks per stage in a V (stage s holds chunks s and 2p-1-s), "
     "split backward; 1F1B's activation memory; needs virtual_stages 2",
     zb_v_order, check_zb_v, 2, first_stage_in_flight, true, true},
    {Schedule::DualPipeV, "dualpipev",
     "DualPipeV (DeepSeek, deepseek-ai/DualPipe): DeepSeek-V3's DualPipe cut in half onto zb-v's V, split "
     "backward; its F+B pairs run one after the other (their communication overlap is not modelled); needs "
     "virtual_stages 2 and at least 2 x pipeline micro-batches",
     dualpipev_order, check_dualpipev, 2, dualpipev_in_flight, true, true},
};

}  // namespace

std::span<const ScheduleKind> schedule_kinds() { return kSchedules; }

const ScheduleKind& schedule_kind(Schedule s) { return table_row(schedule_kinds(), s, "schedule_kind"); }

std::vector<PipelineStep> stage_schedule(Schedule schedule, int p, int m, int v, int stage) {
    return schedule_kind(schedule).order(p, m, v, stage);
}

bool splits_backward(Schedule schedule) { return schedule_kind(schedule).splits_backward; }

}  // namespace cuboid
