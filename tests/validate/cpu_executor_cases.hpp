// The cases and program surgery shared by the CPU-executor tests: a tiny GPT scenario per case,
// its tagged program, the executor run and the comparison with the single-device reference, and
// removing one op from a program (the negative tests).
#pragma once

#include <chrono>
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "sim/memory.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/layout.hpp"
#include "validate/cpu/cpu_executor.hpp"

namespace cuboid::cpu::cases {

// Double precision end to end: agreement is limited by summation order only (~1e-14), so
// 1e-5 leaves a wide margin, while a wrong, missing or misplaced op changes results at O(1).
constexpr double kTolerance = 1e-5;
constexpr double kLearningRate = 0.1;

struct Case {
    int t = 1, p = 1, d = 1;
    Schedule schedule = Schedule::OneFOneB;
    Recompute recompute = Recompute::None;
    bool sp = false;
    int zero = 0;
    int v = 1;
    bool tp_overlap = true;
    bool dp_overlap = true;
    int overlap_chunks = 1;
    int b = 1;  // sequences per micro-batch
    TensorMode mode = TensorMode::OneD;
    AtpOrder order = AtpOrder::ColumnFirst;  // atp: a 2 x (t/2) mesh in this order
    bool fused_attention = false;  // one fused kernel each way (attention dropout off)
    bool te_fp8 = false;           // Transformer Engine's fp8 casts and transposes around the GEMMs
    int shard_group = 0;           // ZeRO-3 hybrid sharding (0: over all d)
    int c = 1;                     // context parallelism (needs fused attention)
    ContextMode context_mode = ContextMode::Ring;
};

// Tiny GPT: 4 layers, h 32, 4 heads, seq 8, vocab 64; 4 micro-batches of b sequences per replica.
inline Scenario scenario_of(const Case& c) {
    Scenario sc;
    sc.name = "cpu";
    sc.model.layers = 4;
    sc.model.hidden = 32;
    sc.model.heads = 4;
    sc.model.seq_len = 8;
    sc.model.vocab = 64;
    sc.cluster.nodes = 1;
    sc.cluster.gpus_per_node = c.t * c.p * c.d * c.c;
    sc.training.micro_batch = c.b;
    sc.training.global_batch = 4 * c.d * c.b;
    sc.training.precision = sim::Precision::Fp32;
    sc.parallel.tensor = c.t;
    sc.parallel.pipeline = c.p;
    sc.parallel.data = c.d;
    sc.parallel.schedule = c.schedule;
    sc.parallel.virtual_stages = c.v;
    sc.parallel.recompute = c.recompute;
    sc.parallel.sequence_parallel = c.sp;
    if (c.fused_attention) {
        sc.model.attention = AttentionKernel::Fused;
        sc.model.attention_dropout = false;
        sc.training.precision = sim::Precision::Bf16;  // the kernels are 16-bit; the executor computes in double
    }
    if (c.te_fp8) {
        sc.model.transformer_engine = true;
        sc.training.precision = sim::Precision::Fp8;
    }
    sc.parallel.zero_stage = c.zero;
    sc.parallel.context = c.c;
    sc.parallel.context_mode = c.context_mode;
    sc.parallel.shard_group = c.shard_group;
    sc.parallel.tp_backward_overlap = c.tp_overlap;
    sc.parallel.dp_overlap = c.dp_overlap;
    sc.parallel.overlap_chunks = c.overlap_chunks;
    sc.parallel.tensor_mode = c.mode;
    if (c.mode == TensorMode::Atp) {
        sc.parallel.atp_mesh = {2, c.t / 2};
        sc.parallel.atp_order = c.order;
    }
    return sc;
}

// Stage-aware recompute decides by memory: a capacity just under stage 0's peak without
// recomputation makes stage 0 checkpoint some of its layers and leaves the others as they are.
inline BuildOptions options_of(const Scenario& sc, const Layout& l) {
    BuildOptions o;
    if (sc.parallel.recompute != Recompute::StageAware) return o;
    const sim::Program plain = build_program(sc, l);
    o.memory_capacity = Bytes(sim::peak_memory(plain.op_lists[0]).peak.value * 0.999);
    return o;
}

// The reference loss's central difference in element i of weight w (part of p) against the
// reference gradient g. Central differences have O(eps^2) truncation error: eps = 1e-5 gives about
// 1e-9 absolute accuracy, and moves no token to other experts.
inline void check_central_difference(const GptDims& d, GptParams& p, const Batch& batch, Mat& w, const Mat& g,
                                     Eigen::Index i) {
    constexpr double eps = 1e-5;
    const double keep = w.data()[i];
    w.data()[i] = keep + eps;
    const double up = reference_loss(d, p, batch);
    w.data()[i] = keep - eps;
    const double down = reference_loss(d, p, batch);
    w.data()[i] = keep;
    CHECK((up - down) / (2 * eps) == Approx(g.data()[i]).margin(1e-7));
}

struct Outcome {
    Execution run;
    Agreement agreement;
};

inline Outcome execute(const Scenario& sc, const TaggedProgram& program,
                       std::chrono::milliseconds timeout = ExecutorOptions{}.timeout) {
    const Layout l = validate_plan(sc);
    const GptDims d = GptDims::of(sc.model);
    const GptParams params = init_params(d, 7);
    const Batch batch = make_batch(d, sc.training.global_batch, 11);
    ExecutorOptions opt;
    opt.learning_rate = kLearningRate;
    opt.timeout = timeout;
    Outcome o{execute_program(sc, l, program, params, batch, opt), {}};
    if (o.run.ok()) o.agreement = compare(o.run, reference_step(d, params, batch), params, kLearningRate);
    return o;
}

// The run completed and matches the single-device reference: the loss, every gradient and the
// updated weights; recomputation is the same arithmetic on the same inputs.
inline void check_agreement(const Outcome& o) {
    INFO("error: " << o.run.error << " worst gradient: " << o.agreement.worst);
    REQUIRE(o.run.ok());
    CHECK(o.agreement.loss < kTolerance);
    CHECK(o.agreement.grads < kTolerance);
    CHECK(o.agreement.weights < kTolerance);
    CHECK(o.run.recompute_diff < 1e-12);
}

inline TaggedProgram build(const Scenario& sc) {
    const Layout l = validate_plan(sc);
    return build_tagged_program(sc, l, options_of(sc, l));
}

inline void check_case(const Case& c) {
    const Scenario sc = scenario_of(c);
    const Outcome o = execute(sc, build(sc));
    INFO("t=" << c.t << " p=" << c.p << " d=" << c.d << " schedule " << to_string(c.schedule) << " recompute "
              << to_string(c.recompute) << " sp " << c.sp << " zero " << c.zero << " v " << c.v << " overlap_chunks "
              << c.overlap_chunks << " b " << c.b << " shard group " << c.shard_group << " c " << c.c << " context mode " << static_cast<int>(c.context_mode) << " tensor mode " << static_cast<int>(c.mode) << " order "
              << static_cast<int>(c.order));
    check_agreement(o);
}

// Removes op `index` of list `list` and its tag; dependencies on it are dropped, later ones renumbered.
inline void erase_op(TaggedProgram& tp, std::size_t list, std::uint32_t index) {
    sim::OpList& ol = tp.program.op_lists[list];
    std::vector<std::uint32_t> deps;
    for (std::uint32_t i = 0; i < ol.ops.size(); ++i) {
        sim::Op& op = ol.ops[i];
        const std::uint32_t first = static_cast<std::uint32_t>(deps.size());
        for (std::uint32_t k = 0; k < op.dep_count; ++k) {
            const std::uint32_t dep = ol.deps[op.first_dep + k];
            if (dep != index) deps.push_back(dep > index ? dep - 1 : dep);
        }
        op.first_dep = first;
        op.dep_count = static_cast<std::uint32_t>(deps.size()) - first;
    }
    ol.deps = std::move(deps);
    ol.ops.erase(ol.ops.begin() + index);
    tp.tags[list].erase(tp.tags[list].begin() + index);
}

// First op with `label` (of a transformer layer when `in_layer`).
inline std::uint32_t first_op(const TaggedProgram& tp, std::size_t list, const std::string& label, bool in_layer = false,
                              std::uint32_t from = 0) {
    const auto& ops = tp.program.op_lists[list].ops;
    for (std::uint32_t i = from; i < ops.size(); ++i)
        if (tp.program.labels[ops[i].label] == label && (!in_layer || tp.tags[list][i].layer >= 0)) return i;
    FAIL("no op " << label);
    return 0;
}

// `sc`'s `program` run without the first `label` of a transformer layer on stage 0 (a short
// timeout: a missing op may leave the ranks waiting for each other).
inline Outcome without_layer_op(const Scenario& sc, TaggedProgram program, const std::string& label) {
    erase_op(program, 0, first_op(program, 0, label, true));
    return execute(sc, program, std::chrono::milliseconds(2000));
}

// ATP on a 2 x 2 mesh. The token split (mode_shapes.hpp) reduce-scatters the MLP's first linear
// over the hidden axis (dr = 2 divides the b*8 tokens) always, the attention's only when dr divides
// b (b = 2: each device's attention core runs on one whole sequence; b = 1: replicated).
inline Case atp(int p, int d, AtpOrder order, Recompute r = Recompute::None, int b = 1, int chunks = 1) {
    Case c{4, p, d, Schedule::OneFOneB, r};
    c.mode = TensorMode::Atp;
    c.order = order;
    c.b = b;
    c.overlap_chunks = chunks;
    return c;
}

inline Case two_d(int p, int d, Recompute r = Recompute::None) {
    Case c{4, p, d, Schedule::OneFOneB, r};
    c.mode = TensorMode::TwoD;
    c.b = 2;  // each row of the 2 x 2 mesh holds b/q whole sequences
    return c;
}

// First op with `label` outside the transformer layers (the embedding, the head, the iteration's end).
inline std::uint32_t first_edge_op(const TaggedProgram& tp, std::size_t list, const std::string& label) {
    const auto& ops = tp.program.op_lists[list].ops;
    for (std::uint32_t i = 0; i < ops.size(); ++i)
        if (tp.program.labels[ops[i].label] == label && tp.tags[list][i].layer < 0) return i;
    FAIL("no op " << label << " outside the layers");
    return 0;
}

inline Outcome without_op(const Case& c, const std::string& label, int skip = 0) {
    const Scenario sc = scenario_of(c);
    TaggedProgram tp = build(sc);
    std::uint32_t at = first_edge_op(tp, 0, label);
    for (int k = 0; k < skip; ++k) {  // the (skip+1)-th such op
        const auto& ops = tp.program.op_lists[0].ops;
        do ++at; while (at < ops.size() && tp.program.labels[ops[at].label] != label);
        REQUIRE(at < ops.size());
    }
    erase_op(tp, 0, at);
    return execute(sc, tp);
}

// Context parallelism (fused attention, as the builder requires) in `mode` with c ranks.
inline Case context(int c, ContextMode mode, int t = 1, int p = 1, int d = 1) {
    Case k{t, p, d};
    k.c = c;
    k.context_mode = mode;
    k.fused_attention = true;
    return k;
}

inline Case sequence_parallel() {
    Case c{2, 1, 1};
    c.sp = true;
    return c;
}

inline Case three_d() {
    Case c{8, 1, 1};
    c.mode = TensorMode::ThreeD;
    c.b = 4;
    return c;
}

inline Case overlapped(int t, int p, int k, bool sp, Schedule schedule = Schedule::OneFOneB, Recompute r = Recompute::None,
                int b = 1) {
    Case c{t, p, 1, schedule, r, sp};
    c.overlap_chunks = k;
    c.b = b;
    return c;
}

}  // namespace cuboid::cpu::cases
