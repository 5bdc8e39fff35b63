// Every strategy's program, executed on threads with real data, must reproduce the loss, every
// gradient and the SGD-updated weights of a single-device reference, and a program with one op
// removed or sent to the wrong group must not.
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/memory.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/layout.hpp"
#include "validate/cpu/cpu_executor.hpp"

using namespace cuboid;
using namespace cuboid::cpu;

namespace {

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
};

// Tiny GPT: 4 layers, h 32, 4 heads, seq 8, vocab 64; 4 micro-batches of b sequences per replica.
Scenario scenario_of(const Case& c) {
    Scenario sc;
    sc.name = "cpu";
    sc.model.layers = 4;
    sc.model.hidden = 32;
    sc.model.heads = 4;
    sc.model.seq_len = 8;
    sc.model.vocab = 64;
    sc.cluster.nodes = 1;
    sc.cluster.gpus_per_node = c.t * c.p * c.d;
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
    sc.parallel.zero_stage = c.zero;
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
BuildOptions options_of(const Scenario& sc, const Layout& l) {
    BuildOptions o;
    if (sc.parallel.recompute != Recompute::StageAware) return o;
    const sim::Program plain = build_program(sc, l);
    o.memory_capacity = Bytes(sim::peak_memory(plain.op_lists[0]).peak.value * 0.999);
    return o;
}

struct Outcome {
    Execution run;
    Agreement agreement;
};

Outcome execute(const Scenario& sc, const TaggedProgram& program) {
    const Layout l = validate_plan(sc);
    const GptDims d = GptDims::of(sc.model);
    const GptParams params = init_params(d, 7);
    const Batch batch = make_batch(d, sc.training.global_batch, 11);
    ExecutorOptions opt;
    opt.learning_rate = kLearningRate;
    Outcome o{execute_program(sc, l, program, params, batch, opt), {}};
    if (o.run.ok()) o.agreement = compare(o.run, reference_step(d, params, batch), params, kLearningRate);
    return o;
}

TaggedProgram build(const Scenario& sc) {
    const Layout l = validate_plan(sc);
    return build_tagged_program(sc, l, options_of(sc, l));
}

void check_case(const Case& c) {
    const Scenario sc = scenario_of(c);
    const Outcome o = execute(sc, build(sc));
    INFO("t=" << c.t << " p=" << c.p << " d=" << c.d << " schedule " << to_string(c.schedule) << " recompute "
              << to_string(c.recompute) << " sp " << c.sp << " zero " << c.zero << " v " << c.v << " overlap_chunks "
              << c.overlap_chunks << " b " << c.b << " tensor mode " << static_cast<int>(c.mode) << " order "
              << static_cast<int>(c.order));
    INFO("error: " << o.run.error << " worst gradient: " << o.agreement.worst);
    REQUIRE(o.run.ok());
    CHECK(o.agreement.loss < kTolerance);
    CHECK(o.agreement.grads < kTolerance);
    CHECK(o.agreement.weights < kTolerance);
    CHECK(o.run.recompute_diff < 1e-12);  // recomputation is the same arithmetic on the same inputs
}

// Removes op `index` of list `list` and its tag; dependencies on it are dropped, later ones renumbered.
void erase_op(TaggedProgram& tp, std::size_t list, std::uint32_t index) {
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
std::uint32_t first_op(const TaggedProgram& tp, std::size_t list, const std::string& label, bool in_layer = false) {
    const auto& ops = tp.program.op_lists[list].ops;
    for (std::uint32_t i = 0; i < ops.size(); ++i)
        if (tp.program.labels[ops[i].label] == label && (!in_layer || tp.tags[list][i].layer >= 0)) return i;
    FAIL("no op " << label);
    return 0;
}

}  // namespace

TEST_CASE("reference gradients match finite differences of the reference loss", "[cpu_executor]") {
    const GptDims d = GptDims::of(scenario_of({}).model);
    GptParams p = init_params(d, 7);
    const Batch batch = make_batch(d, 2, 11);
    const Reference ref = reference_step(d, p, batch);
    // Central differences have O(eps^2) truncation error; eps = 1e-5 gives ~1e-9 absolute accuracy.
    constexpr double eps = 1e-5;
    const auto check = [&](Mat& w, const Mat& g, Eigen::Index i) {
        const double keep = w.data()[i];
        w.data()[i] = keep + eps;
        const double up = reference_loss(d, p, batch);
        w.data()[i] = keep - eps;
        const double down = reference_loss(d, p, batch);
        w.data()[i] = keep;
        CHECK((up - down) / (2 * eps) == Approx(g.data()[i]).margin(1e-7));
    };
    check(p.wemb, ref.grads.wemb, 3 + 64 * 5);
    check(p.wpos, ref.grads.wpos, 10);
    check(p.layers[0].wqkv, ref.grads.layers[0].wqkv, 100);
    check(p.layers[1].wqkv, ref.grads.layers[1].wqkv, 32 * 40 + 7);  // a K column
    check(p.layers[1].ln1_g, ref.grads.layers[1].ln1_g, 5);
    check(p.layers[2].wproj, ref.grads.layers[2].wproj, 77);
    check(p.layers[3].w1, ref.grads.layers[3].w1, 300);
    check(p.layers[3].b2, ref.grads.layers[3].b2, 4);
    check(p.lnf_b, ref.grads.lnf_b, 9);
    check(p.wout, ref.grads.wout, 500);
}

TEST_CASE("every (t, p, d) layout reproduces the reference under 1F1B", "[cpu_executor]") {
    for (auto [t, p, d] : {std::array{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 2}, {4, 2, 1}})
        check_case(Case{t, p, d});
}

TEST_CASE("sequence parallelism reproduces the reference", "[cpu_executor]") {
    for (auto [t, p, d] : {std::array{2, 1, 1}, {2, 2, 2}, {4, 2, 1}}) check_case(Case{t, p, d, Schedule::OneFOneB, Recompute::None, true});
}

TEST_CASE("every pipeline schedule reproduces the reference", "[cpu_executor]") {
    check_case(Case{2, 2, 1, Schedule::GPipe});
    check_case(Case{1, 2, 2, Schedule::GPipe});
    check_case(Case{2, 2, 1, Schedule::Interleaved, Recompute::None, false, 0, 2});
    check_case(Case{1, 2, 2, Schedule::Interleaved, Recompute::Full, true, 0, 2});
    check_case(Case{2, 2, 1, Schedule::Interleaved, Recompute::None, true, 0, 2});
    check_case(Case{1, 2, 1, Schedule::ShiftedCriticalPath, Recompute::Full});
    check_case(Case{2, 2, 2, Schedule::ShiftedCriticalPath, Recompute::Full, true});
    check_case(Case{1, 4, 1, Schedule::ShiftedCriticalPath, Recompute::StageAware});
}

TEST_CASE("every recompute policy reproduces the reference", "[cpu_executor]") {
    for (Recompute r : {Recompute::Full, Recompute::Selective, Recompute::StageAware}) {
        check_case(Case{1, 1, 1, Schedule::OneFOneB, r});
        check_case(Case{2, 2, 1, Schedule::OneFOneB, r});
        check_case(Case{2, 2, 1, Schedule::OneFOneB, r, true});
    }
}

TEST_CASE("ZeRO 1 and 2 reproduce the reference and the updated weights", "[cpu_executor]") {
    for (int zero : {1, 2}) {
        check_case(Case{1, 1, 2, Schedule::OneFOneB, Recompute::None, false, zero});
        check_case(Case{2, 2, 2, Schedule::OneFOneB, Recompute::Full, true, zero});
    }
}

TEST_CASE("synchronous tensor and data-parallel reductions reproduce the reference", "[cpu_executor]") {
    Case c{2, 2, 2};
    c.tp_overlap = false;
    c.dp_overlap = false;
    check_case(c);
}

Case overlapped(int t, int p, int k, bool sp, Schedule schedule = Schedule::OneFOneB, Recompute r = Recompute::None,
                int b = 1) {
    Case c{t, p, 1, schedule, r, sp};
    c.overlap_chunks = k;
    c.b = b;
    return c;
}

// Merak's sub-pipelined tensor parallelism: with one sequence per micro-batch the k sub-batches
// cut the sequence (later queries attend to earlier sub-batches' keys); with b = k they are whole
// sequences. Each sub-batch's reduction must carry that sub-batch's rows.
TEST_CASE("overlap chunks reproduce the reference", "[cpu_executor]") {
    for (int k : {2, 4})
        for (bool sp : {false, true}) {
            check_case(overlapped(2, 1, k, sp));
            check_case(overlapped(2, 2, k, sp, Schedule::ShiftedCriticalPath, Recompute::StageAware));
        }
    check_case(overlapped(2, 2, 2, true, Schedule::OneFOneB, Recompute::Full));
    check_case(overlapped(2, 1, 2, false, Schedule::OneFOneB, Recompute::Selective));
    check_case(overlapped(2, 1, 2, true, Schedule::OneFOneB, Recompute::None, 2));  // whole sequences
    check_case(overlapped(2, 2, 4, false, Schedule::ShiftedCriticalPath, Recompute::Full, 4));
}

TEST_CASE("overlap chunks fail the check when sub-batches are not tagged", "[cpu_executor]") {
    const Scenario sc = scenario_of(overlapped(2, 1, 2, false));
    TaggedProgram tp = build(sc);
    const auto& tags = tp.tags[0];
    REQUIRE(std::any_of(tags.begin(), tags.end(), [](const OpTag& t) { return t.sub_chunk == 1; }));
    for (OpTag& tag : tp.tags[0]) tag.sub_chunk = tag.sub_chunk >= 0 ? 0 : -1;  // every op on sub-batch 0
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("layer input") != std::string::npos);  // sub-batch 0 takes its rows twice
}

TEST_CASE("overlap chunks fail the check when a reduction carries another sub-batch's rows", "[cpu_executor]") {
    const Scenario sc = scenario_of(overlapped(2, 1, 2, false));
    TaggedProgram tp = build(sc);
    // The projection all-reduces of layer 0's two sub-batches; the second is made to depend on the
    // first sub-batch's projection, so sub-batch 1 never receives its sum.
    sim::OpList& ol = tp.program.op_lists[0];
    std::vector<std::uint32_t> reductions;
    for (std::uint32_t i = 0; i < ol.ops.size() && reductions.size() < 2; ++i)
        if (tp.program.labels[ol.ops[i].label] == "F.tp.allreduce" && tp.tags[0][i].layer == 0) reductions.push_back(i);
    REQUIRE(reductions.size() == 2);
    REQUIRE(tp.tags[0][reductions[1]].sub_chunk == 1);
    REQUIRE(ol.ops[reductions[1]].dep_count == 1);
    ol.deps[ol.ops[reductions[1]].first_dep] = ol.deps[ol.ops[reductions[0]].first_dep];
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("ProjRed") != std::string::npos);
}

Case atp(int p, int d, AtpOrder order, Recompute r = Recompute::None) {
    Case c{4, p, d, Schedule::OneFOneB, r};
    c.mode = TensorMode::Atp;
    c.order = order;
    return c;
}

// ATP on a 2 x 2 mesh: the linears' partial sums and the LayerNorm statistics reduce over the
// two axis groups (slots 6 and 7), in both orders of the axes.
TEST_CASE("ATP reproduces the reference", "[cpu_executor]") {
    for (AtpOrder order : {AtpOrder::ColumnFirst, AtpOrder::RowFirst}) {
        check_case(atp(1, 1, order));
        check_case(atp(1, 2, order, Recompute::Full));
    }
    check_case(atp(2, 1, AtpOrder::ColumnFirst));
}

Case two_d(int p, int d, Recompute r = Recompute::None) {
    Case c{4, p, d, Schedule::OneFOneB, r};
    c.mode = TensorMode::TwoD;
    c.b = 2;  // each row of the 2 x 2 mesh holds b/q whole sequences
    return c;
}

// 2d (SUMMA) on a 2 x 2 mesh: each linear in two steps of row and column broadcasts, the input
// and weight gradients reduced to the step's device.
TEST_CASE("2d reproduces the reference", "[cpu_executor]") {
    check_case(two_d(1, 1));
    check_case(two_d(2, 1));
    check_case(two_d(1, 2, Recompute::Full));
}

// 3d on a 2 x 2 x 2 cube: gathers over the input and weight axes, reduce-scatters over the output
// axis; each device's rows are b/q^2 whole sequences.
TEST_CASE("3d reproduces the reference", "[cpu_executor]") {
    Case c{8, 1, 1};
    c.mode = TensorMode::ThreeD;
    c.b = 4;
    check_case(c);
    c.p = 2;
    c.recompute = Recompute::Full;
    check_case(c);
}

TEST_CASE("tensor modes fail the check when a mesh collective is missing", "[cpu_executor]") {
    {  // ATP: the first layer's LayerNorm statistic all-reduce over the hidden axis
        const Scenario sc = scenario_of(atp(1, 1, AtpOrder::ColumnFirst));
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, first_op(tp, 0, "F.tp.allreduce", true));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find("needs Ln1") != std::string::npos);  // normalised only once the totals arrive
    }
    {  // 2d: the first SUMMA broadcast of the first layer's QKV input
        const Scenario sc = scenario_of(two_d(1, 1));
        TaggedProgram tp = build(sc);
        erase_op(tp, 0, first_op(tp, 0, "F.tp.broadcast", true));
        const Outcome o = execute(sc, tp);
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find("broadcast") != std::string::npos);
    }
}

TEST_CASE("the check fails when a collective is missing", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{2, 1, 1});
    TaggedProgram tp = build(sc);
    erase_op(tp, 0, first_op(tp, 0, "F.tp.allreduce", true));  // the first layer's projection all-reduce
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    INFO(o.run.error);
    CHECK(o.run.error.find("ProjRed") != std::string::npos);
}

TEST_CASE("the check fails when a recomputation is missing", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{1, 1, 1, Schedule::OneFOneB, Recompute::Selective});
    TaggedProgram tp = build(sc);
    erase_op(tp, 0, first_op(tp, 0, "R.softmax"));
    const Outcome o = execute(sc, tp);
    REQUIRE_FALSE(o.run.ok());
    CHECK(o.run.error.find("Probs") != std::string::npos);
}

TEST_CASE("the check fails when a gradient reduction uses the wrong group", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{1, 1, 2});
    TaggedProgram tp = build(sc);
    // With t = 1 the tensor group is the rank alone: the replicas' gradients are never summed.
    tp.program.op_lists[0].ops[first_op(tp, 0, "dp.allreduce")].group_slot = slot::kTensor;
    const Outcome o = execute(sc, tp);
    REQUIRE(o.run.ok());
    CHECK(o.agreement.grads > 1e-2);
}

TEST_CASE("the check fails when a pipeline message is lost", "[cpu_executor]") {
    const Scenario sc = scenario_of(Case{1, 2, 1});
    TaggedProgram tp = build(sc);
    erase_op(tp, 0, first_op(tp, 0, "pp.send_act"));
    Outcome o;
    {
        const Layout l = validate_plan(sc);
        const GptDims d = GptDims::of(sc.model);
        ExecutorOptions opt;
        opt.timeout = std::chrono::milliseconds(300);  // the receiver waits forever: a deadlock
        o.run = execute_program(sc, l, tp, init_params(d, 7), make_batch(d, sc.training.global_batch, 11), opt);
    }
    REQUIRE_FALSE(o.run.ok());
}

namespace {

// First op with `label` outside the transformer layers (the embedding, the head, the iteration's end).
std::uint32_t first_edge_op(const TaggedProgram& tp, std::size_t list, const std::string& label) {
    const auto& ops = tp.program.op_lists[list].ops;
    for (std::uint32_t i = 0; i < ops.size(); ++i)
        if (tp.program.labels[ops[i].label] == label && tp.tags[list][i].layer < 0) return i;
    FAIL("no op " << label << " outside the layers");
    return 0;
}

Outcome without_op(const Case& c, const std::string& label, int skip = 0) {
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

Case sequence_parallel() {
    Case c{2, 1, 1};
    c.sp = true;
    return c;
}

Case three_d() {
    Case c{8, 1, 1};
    c.mode = TensorMode::ThreeD;
    c.b = 4;
    return c;
}

}  // namespace

// LayerNorm and bias gradients partial over a device's rows: without the program's
// tp.grad_allreduce each device keeps the sum over its own rows only (1d + sp: 1/2 of the rows
// per rank; 2d: 1/q; 3d: 1/q^2), so those gradients are off by O(1).
TEST_CASE("the check fails without the all-reduce of the row-partial gradients", "[cpu_executor]") {
    const auto fails = [](const Outcome& o) {
        REQUIRE(o.run.ok());
        INFO("worst gradient: " << o.agreement.worst);
        CHECK(o.agreement.grads > 1e-2);
    };
    fails(without_op(sequence_parallel(), "tp.grad_allreduce"));
    fails(without_op(two_d(1, 1), "tp.grad_allreduce"));
    fails(without_op(three_d(), "tp.grad_allreduce"));     // hidden-block bucket over axis 0
    fails(without_op(three_d(), "tp.grad_allreduce", 2));  // QKV / FC1 biases over axis 1
}

TEST_CASE("the check fails without the gathers and statistics of the model's ends", "[cpu_executor]") {
    const auto stops = [](const Outcome& o, const std::string& what) {
        REQUIRE_FALSE(o.run.ok());
        INFO(o.run.error);
        CHECK(o.run.error.find(what) != std::string::npos);
    };
    // Sequence parallelism: the logits weight gradient needs the final LayerNorm output gathered again.
    stops(without_op(sequence_parallel(), "B.tp.allgather"), "needs LnfFull");
    // 2d and 3d: the final LayerNorm normalises its block only once the row statistics are summed.
    stops(without_op(two_d(1, 1), "F.tp.allreduce"), "needs Lnf");
    stops(without_op(three_d(), "F.tp.allreduce"), "needs Lnf");
    // ... and its input gradient once the gradient's row sums are.
    stops(without_op(two_d(1, 1), "B.tp.allreduce"), "output gradient at layer position 4");
    // ATP: the head and the embedding need the whole hidden size.
    stops(without_op(atp(1, 1, AtpOrder::ColumnFirst), "F.tp.allgather"), "final LayerNorm input not gathered");
    stops(without_op(atp(1, 1, AtpOrder::ColumnFirst), "B.tp.allgather"), "embedding gradient not gathered");
}
