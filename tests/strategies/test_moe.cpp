// Mixture of experts with expert parallelism against closed forms: Megatron-Core's expert groups
// (t x c x d ranks regrouped as etp x ep x expert-data), the FLOPs of an expert layer (its active
// parameters), the bytes of the dispatch and combine all-to-alls, the gradient reductions over
// the expert-data group, the experts' memory per rank, the dense leading layers, and that folding
// gives the full run's answer.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/model_math.hpp"
#include "strategies/model_presets.hpp"
#include "strategies/moe_layer.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;
using test::at;
using test::label_totals;
using test::LabelTotals;

namespace {

constexpr int kMicro = 4;
constexpr int kLayers = 4;
constexpr int kExperts = 8;
constexpr int kTopK = 2;
constexpr int kExpertFfn = 96;

// The tiny model as a Megatron-Core mixture of experts (SwiGLU experts, fused attention), on
// t x p x d GPUs with expert degree ep and expert tensor degree etp.
Scenario moe_plan(int t, int p, int d, int ep, int etp) {
    Scenario sc = test::tiny_scenario(t, p, d, kMicro, kLayers);
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.experts = kExperts;
    sc.model.experts_per_token = kTopK;
    sc.model.expert_ffn_hidden = kExpertFfn;
    sc.parallel.sequence_parallel = t > 1;
    sc.parallel.expert = ep;
    sc.parallel.expert_tensor = etp;
    return sc;
}

const std::vector<std::uint32_t>& group(const sim::Program& p, std::uint32_t rank, std::uint16_t slot) {
    return p.groups[p.ranks[rank].groups[slot]].ranks;
}

}  // namespace

TEST_CASE("expert parallelism: Megatron-Core's expert groups regroup a stage's t x d ranks as etp x ep x edp") {
    for (const auto& [ep, etp] : {std::pair{4, 1}, std::pair{2, 2}, std::pair{8, 1}, std::pair{1, 2}}) {
        const Scenario sc = moe_plan(2, 2, 4, ep, etp);
        const Layout l = validate_plan(sc);
        REQUIRE(l.gpus() == 16);
        CHECK(l.expert_data() == 8 / (ep * etp));
        const sim::Program prog = build_program(sc, l);
        INFO("ep " << ep << " etp " << etp);
        for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
            const int stage = l.stage_of(r), q = static_cast<int>(r) % 8;  // q = tp + t * dp
            const int a = q % etp, e = (q / etp) % ep, f = q / (etp * ep);
            // The degrees by value: clang 14 cannot capture structured bindings.
            const auto rank = [stage, ep_ = ep, etp_ = etp](int aa, int ee, int ff) {
                return static_cast<std::uint32_t>(stage * 8 + aa + etp_ * (ee + ep_ * ff));
            };
            std::vector<std::uint32_t> expert, expert_tensor, expert_data;
            for (int k = 0; k < ep; ++k) expert.push_back(rank(a, k, f));
            for (int k = 0; k < etp; ++k) expert_tensor.push_back(rank(k, e, f));
            for (int k = 0; k < 8 / (ep * etp); ++k) expert_data.push_back(rank(a, e, k));
            CHECK(group(prog, r, slot::kExpert) == expert);
            CHECK(group(prog, r, slot::kExpertTensor) == expert_tensor);
            CHECK(group(prog, r, slot::kExpertData) == expert_data);
        }
    }
}

TEST_CASE("expert parallelism: an expert layer's FLOPs are its active parameters'") {
    const Scenario sc = moe_plan(1, 1, 1, 1, 1);
    const ModelSpec& m = sc.model;
    const double tokens = m.seq_len, h = m.hidden, ffn = kExpertFfn;
    // Closed form per token: QKV 2h(h+2h), projection 2h^2, attention 4sh, router 2hE, top-k
    // SwiGLU experts 2 * 3 * h * ffn each.
    const double attention = 2 * h * 3 * h + 2 * h * h + 4 * tokens * h;
    const double per_token = attention + 2 * h * kExperts + kTopK * 6 * h * ffn;
    CHECK(layer_forward_flops(m, 1, kLayers - 1) == Approx(tokens * per_token));
    // With shared experts: one more MLP of shared * ffn per token.
    Scenario shared = sc;
    shared.model.shared_experts = 2;
    CHECK(layer_forward_flops(shared.model, 1, 0) == Approx(tokens * (per_token + 6 * h * 2 * ffn)));
    // The leading dense layers keep the dense MLP.
    Scenario dense_first = sc;
    dense_first.model.dense_layers = 1;
    CHECK(layer_forward_flops(dense_first.model, 1, 0) == Approx(layer_forward_flops(dense_first.model, 1)));
    // The program runs those FLOPs: every rank's grouped expert GEMMs carry top_k copies of its
    // tokens whatever ep and etp, so the forward expert FLOPs per rank are the same.
    for (const auto& [ep, etp] : {std::pair{1, 1}, std::pair{4, 1}, std::pair{2, 2}, std::pair{4, 2}}) {
        const Scenario plan = moe_plan(1, 1, 8, ep, etp);
        const LabelTotals got = label_totals(build_program(plan, validate_plan(plan)), 0);
        INFO("ep " << ep << " etp " << etp);
        const double expert_fwd = at(got.flops, "F.moe.expert_fc1") + at(got.flops, "F.moe.expert_fc2");
        CHECK(expert_fwd == Approx(kMicro * kLayers * tokens * kTopK * 6 * h * ffn));
        CHECK(at(got.flops, "F.moe.router") == Approx(kMicro * kLayers * tokens * 2 * h * kExperts));
        CHECK(at(got.flops, "B.moe.expert_fc1.wgrad") == Approx(at(got.flops, "F.moe.expert_fc1")));
        CHECK(at(got.flops, "F.fc1") == 0.0);  // no dense MLP
    }
    // Load imbalance: the busiest expert's share runs on every rank.
    Scenario skewed = moe_plan(1, 1, 8, 4, 1);
    skewed.model.moe_load_imbalance = 2.0;
    const Scenario balanced = moe_plan(1, 1, 8, 4, 1);
    const LabelTotals a = label_totals(build_program(skewed, validate_plan(skewed)), 0);
    const LabelTotals b = label_totals(build_program(balanced, validate_plan(balanced)), 0);
    CHECK(at(a.flops, "F.moe.expert_fc1") == Approx(2.0 * at(b.flops, "F.moe.expert_fc1")));
    CHECK(at(a.bytes, "F.ep.alltoall_dispatch") == Approx(2.0 * at(b.bytes, "F.ep.alltoall_dispatch")));
    // The model FLOPs of an iteration: 3 x (layers + logits) forward.
    const double logits = 2.0 * tokens * h * m.vocab;
    CHECK(model_flops_per_iteration(m, 1) == Approx(3.0 * (kLayers * tokens * per_token + logits)));
}

TEST_CASE("expert parallelism: the dispatch and combine move tokens x top_k x h per rank each way") {
    for (const auto& [t, ep, etp] : {std::tuple{1, 4, 1}, std::tuple{2, 4, 1}, std::tuple{2, 2, 2}, std::tuple{1, 1, 2}}) {
        const Scenario sc = moe_plan(t, 1, 8 / t, ep, etp);
        const LabelTotals got = label_totals(build_program(sc, validate_plan(sc)), 0);
        // A rank routes its own b*s/t tokens (sequence parallelism), top_k copies each, 2 bytes.
        const double buffer = 2.0 * (sc.model.seq_len / t) * kTopK * sc.model.hidden;
        const double per = kMicro * kLayers;
        INFO("t " << t << " ep " << ep << " etp " << etp);
        const double a2a = ep > 1 ? per * buffer : 0.0;
        for (const char* label : {"F.ep.alltoall_dispatch", "F.ep.alltoall_combine", "B.ep.alltoall_dispatch",
                                  "B.ep.alltoall_combine"})
            CHECK(at(got.bytes, label) == Approx(a2a));
        const double etp_bytes = etp > 1 ? per * buffer * etp : 0.0;  // the gathered rows of etp ranks
        CHECK(at(got.bytes, "F.etp.allgather") == Approx(etp_bytes));
        CHECK(at(got.bytes, "F.etp.reducescatter") == Approx(etp_bytes));
        CHECK(at(got.bytes, "B.etp.allgather") == Approx(etp_bytes));
        CHECK(at(got.bytes, "B.etp.reducescatter") == Approx(etp_bytes));
        LayerDims d = LayerDims::make(sc.model, 1, t, t > 1, sc.training.precision);
        d.set_experts(sc.model, ep, etp);
        CHECK(moe_dispatch_bytes(d) == Approx(buffer));
    }
}

TEST_CASE("expert parallelism: expert gradients reduce over the expert-data group, the rest over data") {
    for (const int zero : {0, 1}) {
        const Scenario base = [&] {
            Scenario s = moe_plan(2, 1, 4, 2, 1);
            s.parallel.zero_stage = zero;
            return s;
        }();
        const Layout l = validate_plan(base);
        const sim::Program prog = build_program(base, l);
        const LabelTotals got = label_totals(prog, 0);
        const LayerParameters layer = layer_parameters(base.model, 0, 2, 2, 1);
        // Closed form of the experts per rank: experts/ep SwiGLU MLPs of 3 h ffn each.
        CHECK(layer.expert == Approx(kExperts / 2 * 3.0 * base.model.hidden * kExpertFfn));
        const StageParameters stage = stage_parameter_split(base.model, l, 0);
        CHECK(stage.expert == Approx(kLayers * layer.expert));
        const std::string edp = zero >= 1 ? "edp.reducescatter" : "edp.allreduce";
        const std::string dp = zero >= 1 ? "dp.reducescatter" : "dp.allreduce";
        INFO("zero " << zero);
        CHECK(at(got.bytes, edp) == Approx(4.0 * stage.expert));  // fp32 gradients
        CHECK(at(got.bytes, dp) == Approx(4.0 * stage.dense));
        CHECK(at(got.bytes, "edp.allgather") == Approx(zero >= 1 ? 2.0 * stage.expert : 0.0));
        // The expert-data group: t*d / (ep*etp) = 4 ranks; the data group: d = 4.
        for (const sim::Op& op : prog.op_lists[0].ops) {
            const std::string& label = prog.labels[op.label];
            if (label.starts_with("edp.")) CHECK(op.group_slot == slot::kExpertData);
            if (label.starts_with("F.ep.") || label.starts_with("B.ep.")) CHECK(op.group_slot == slot::kExpert);
            if (label.starts_with("F.ep.") || label.starts_with("B.ep.")) CHECK(op.stream == stream::kTensorComm);
        }
        CHECK(group(prog, 0, slot::kExpertData).size() == 4);
    }
    // ep = t*d: every rank holds its own experts, nothing to reduce them over.
    const Scenario all = moe_plan(1, 1, 8, 8, 1);
    CHECK(at(label_totals(build_program(all, validate_plan(all)), 0).bytes, "edp.reducescatter") == 0.0);
}

TEST_CASE("expert parallelism: each rank keeps experts/(ep*etp) of the experts' state, sharded over expert-data") {
    Scenario one = moe_plan(1, 1, 8, 1, 1), split = moe_plan(1, 1, 8, 4, 2);
    one.parallel.zero_stage = split.parallel.zero_stage = 1;
    const ResidentMemory a = stage_resident_memory(one, validate_plan(one), 0);
    const ResidentMemory b = stage_resident_memory(split, validate_plan(split), 0);
    const double experts = kLayers * kExperts * 3.0 * one.model.hidden * kExpertFfn;
    // bf16 weights: 2 bytes per parameter; the dense part is the same in both plans.
    CHECK(a.weights_bytes - b.weights_bytes == Approx(2.0 * experts * (1.0 - 1.0 / 8)));
    // ZeRO-1: the optimizer state of the experts over expert-data = 8/(4*2) = 1 rank, of the
    // rest over the 8 data ranks.
    const StageParameters pa = stage_parameter_split(one.model, validate_plan(one), 0);
    CHECK(pa.expert == Approx(experts));
    CHECK(b.optimizer_state_bytes == Approx(12.0 * (pa.dense / 8 + experts / 8)));
    CHECK(a.optimizer_state_bytes == Approx(12.0 * (pa.dense / 8 + experts / 8)));
    // The whole model counts every expert once.
    CHECK(parameter_count(one.model) ==
          Approx(kLayers * layer_parameters(one.model, 0, 1).total() + embedding_parameter_count(one.model) +
                 head_parameter_count(one.model)));
    CHECK(layer_parameters(one.model, 0, 1, 4, 2).expert == Approx(layer_parameters(one.model, 0, 1).expert / 8));
}

TEST_CASE("expert parallelism: the head's parameters are on the stage that holds the head (ZB-V: the first)") {
    for (const Schedule schedule : {Schedule::OneFOneB, Schedule::ZeroBubbleV}) {
        Scenario sc = moe_plan(1, 2, 2, 2, 1);
        sc.parallel.schedule = schedule;
        sc.parallel.virtual_stages = schedule == Schedule::ZeroBubbleV ? 2 : 1;
        const Layout l = validate_plan(sc);
        const StageParameters first = stage_parameter_split(sc.model, l, 0), last = stage_parameter_split(sc.model, l, 1);
        const double embedding = embedding_parameters_per_rank(sc.model, 1);
        const double head = head_parameters_per_rank(sc.model, 1, l.tied_pipeline());
        INFO(to_string(schedule));
        // Both stages hold two of the four layers: only the model's ends differ.
        CHECK(first.expert == Approx(last.expert));
        if (schedule == Schedule::ZeroBubbleV) CHECK(first.dense - last.dense == Approx(embedding + head));
        else CHECK(first.dense - last.dense == Approx(embedding - head));
    }
}

TEST_CASE("expert parallelism: the dispatched tokens' activations and the dispatch buffer") {
    Scenario sc = moe_plan(1, 1, 8, 4, 1);
    LayerDims d = LayerDims::make(sc.model, 1, 1, false, sc.training.precision);
    d.set_experts(sc.model, 4, 1);
    const MoeActivations keep = moe_activations(d);
    const double rows = sc.model.seq_len * kTopK;  // balanced: top_k copies of the rank's tokens
    CHECK(d.expert_rows() == rows);
    CHECK(keep.dispatched == Approx(2.0 * rows * sc.model.hidden));
    CHECK(keep.expert_inner == Approx(2.0 * rows * 3 * kExpertFfn));  // gate+up out, activation out
    // The forward keeps them, full recomputation moves them to the recompute pass.
    const Layout l = validate_plan(sc);
    const sim::Program plain = build_program(sc, l);
    sc.parallel.recompute = Recompute::Full;
    const sim::Program full = build_program(sc, validate_plan(sc));
    double plain_fwd = 0.0, full_fwd = 0.0, full_rec = 0.0;
    for (const sim::Op& op : plain.op_lists[0].ops)
        if (plain.labels[op.label] == "F.moe.expert_fc1") plain_fwd += op.memory_alloc.value;
    for (const sim::Op& op : full.op_lists[0].ops) {
        if (full.labels[op.label] == "F.moe.expert_fc1") full_fwd += op.memory_alloc.value;
        if (full.labels[op.label] == "R.moe.expert_fc1") full_rec += op.memory_alloc.value;
    }
    CHECK(plain_fwd == Approx(kMicro * kLayers * keep.dispatched));
    CHECK(full_fwd == 0.0);
    CHECK(full_rec == Approx(plain_fwd));
    // Every allocation is released by the end of the iteration.
    for (const sim::Program* p : {&plain, &full}) {
        double balance = 0.0;
        for (const sim::Op& op : p->op_lists[0].ops) balance += op.memory_alloc.value - op.memory_free.value;
        CHECK(balance == Approx(0.0).margin(1.0));
    }
}

TEST_CASE("expert parallelism: the leading dense layers run the dense MLP and hold no experts") {
    Scenario sc = moe_plan(1, 1, 8, 4, 1);
    sc.model.dense_layers = 1;
    sc.model.shared_experts = 1;
    const Layout l = validate_plan(sc);
    const LabelTotals got = label_totals(build_program(sc, l), 0);
    CHECK(got.count.at("F.fc1") == kMicro * 1);
    CHECK(got.count.at("F.moe.router") == kMicro * (kLayers - 1));
    CHECK(got.count.at("F.moe.shared_fc1") == kMicro * (kLayers - 1));
    const StageParameters stage = stage_parameter_split(sc.model, l, 0);
    CHECK(stage.expert == Approx((kLayers - 1) * layer_parameters(sc.model, 1, 1, 4, 1).expert));
    CHECK(layer_parameters(sc.model, 0, 1, 4, 1).expert == 0.0);
}

TEST_CASE("expert parallelism runs: the folded simulation equals the full one") {
    for (const auto& [t, ep, etp] : {std::tuple{1, 4, 1}, std::tuple{2, 2, 2}, std::tuple{2, 4, 1}}) {
        Scenario sc = moe_plan(t, 2, 8 / t, ep, etp);
        sc.model.shared_experts = 1;
        RunOptions full;
        full.hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
        RunOptions folded = full;
        folded.fold = true;
        const RunResult a = run_scenario(sc, full), b = run_scenario(sc, folded);
        INFO("t " << t << " ep " << ep << " etp " << etp);
        CHECK(a.iteration_time_s > 0.0);
        CHECK(b.sim_fold_factor > 1.0);
        CHECK(a.iteration_time_s == b.iteration_time_s);
        CHECK(a.fingerprint == b.fingerprint);
        CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    }
}

TEST_CASE("expert parallelism: the all-to-alls cost time, more across nodes") {
    Scenario none = moe_plan(1, 1, 16, 1, 1), local = moe_plan(1, 1, 16, 8, 1), across = moe_plan(1, 1, 16, 16, 1);
    for (Scenario* s : {&none, &local, &across}) {
        s->cluster.nodes = 2;
        s->cluster.gpus_per_node = 8;
        s->model.experts = 16;
        s->model.hidden = 256;
        s->model.seq_len = 128;
    }
    const auto time = [](const Scenario& s) {
        RunOptions o;
        o.hardware = hw::Hardware::build(s.cluster, hw::Catalog::load_builtin());
        const Breakdown b = run_scenario(s, o).breakdown;
        CHECK(b.tp_comm_exposed_s == 0.0);  // no tensor parallelism: the exposed all-to-alls are the experts'
        return b.ep_comm_exposed_s;
    };
    CHECK(time(none) == 0.0);
    CHECK(time(local) > 0.0);
    CHECK(time(across) > time(local));
}

TEST_CASE("expert parallelism: plans it cannot run are refused at their key") {
    const auto refused = [](Scenario sc, const std::string& key, const std::string& says) {
        try {
            validate_plan(sc);
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK(e.where().key == key);
            CHECK_THAT(e.what(), Catch::Contains(says));
        }
    };
    refused(moe_plan(1, 1, 8, 3, 1), "parallel.expert", "must divide the 8 experts");
    refused(moe_plan(1, 1, 4, 8, 1), "parallel.expert", "must divide tensor*data = 4");
    Scenario odd_ffn = moe_plan(1, 1, 8, 1, 8);
    odd_ffn.model.expert_ffn_hidden = 100;
    refused(odd_ffn, "parallel.expert_tensor", "expert MLP size 100");
    Scenario dense = test::tiny_scenario(1, 1, 4, kMicro, kLayers);
    dense.parallel.expert = 2;
    refused(dense, "parallel.expert", "mixture-of-experts model");
    Scenario mla = moe_plan(1, 1, 8, 4, 1);
    mla.model.attention_kind = AttentionKind::Mla;
    refused(mla, "model.q_lora_rank", "multi-head latent attention needs it");  // the latent widths missing
    Scenario no_sp = moe_plan(2, 1, 4, 4, 1);
    no_sp.parallel.sequence_parallel = false;
    refused(no_sp, "parallel.sequence_parallel", "sequence parallelism");
    // Hybrid sharding shards each expert over the expert-data ranks of one shard group: 4 ranks
    // per shard group hold one copy of the 4-way expert group, nothing to shard.
    Scenario hybrid = moe_plan(1, 1, 8, 4, 1);
    hybrid.parallel.zero_stage = 3;
    hybrid.parallel.shard_group = 4;
    refused(hybrid, "parallel.shard_group", "needs at least two, so shard_group must be at least 8");
    Scenario uneven = moe_plan(1, 1, 12, 4, 1);  // a shard group of 6 cuts an expert group of 4
    uneven.parallel.zero_stage = 3;
    uneven.parallel.shard_group = 6;
    refused(uneven, "parallel.shard_group", "expert*expert_tensor = 4 must divide tensor*shard_group = 6");
    Scenario topk = moe_plan(1, 1, 8, 4, 1);
    topk.model.experts_per_token = 9;
    refused(topk, "model.experts_per_token", "at most the 8 experts");
    Scenario all_dense = moe_plan(1, 1, 8, 4, 1);
    all_dense.model.dense_layers = kLayers;
    refused(all_dense, "model.dense_layers", "at least one");
    Scenario skew = moe_plan(1, 1, 8, 4, 1);
    skew.model.moe_load_imbalance = 5.0;  // above experts / top_k = 4
    refused(skew, "model.moe_load_imbalance", "experts / experts_per_token = 4");
}

TEST_CASE("expert parallelism under a split backward: the W pass holds the expert weight gradients") {
    // Pipeline 4, data 2, ep 2, with shared experts: the same plan under 1F1B and ZB-H1.
    const auto plan = [](Schedule s) {
        Scenario sc = moe_plan(1, 4, 2, 2, 1);
        sc.model.shared_experts = 1;
        sc.training.global_batch = 16;  // 8 micro-batches per pipeline
        sc.parallel.schedule = s;
        return sc;
    };
    const Scenario one_f_one_b = plan(Schedule::OneFOneB), zb = plan(Schedule::ZeroBubbleH1);
    // Every expert, router and shared-expert weight gradient is in the program once per layer and
    // micro-batch either way; under ZB-H1 none of them is in a B pass.
    const auto wgrads = [](const Scenario& sc) {
        const TaggedProgram tp = build_tagged_program(sc, validate_plan(sc));
        std::map<std::string, int> n;
        for (std::size_t list = 0; list < tp.program.op_lists.size(); ++list)
            for (const sim::Op& op : tp.program.op_lists[list].ops) {
                const std::string& label = tp.program.labels[op.label];
                if (label.starts_with("B.moe.") && label.ends_with(".wgrad")) ++n[label];
            }
        return n;
    };
    const auto counts = wgrads(one_f_one_b);
    CHECK(counts.size() == 5);  // router, expert FC1 and FC2, shared FC1 and FC2
    CHECK(wgrads(zb) == counts);
    // The simulator runs it without deadlock, with less bubble than 1F1B.
    RunOptions o;
    o.hardware = hw::Hardware::build(zb.cluster, hw::Catalog::load_builtin());
    const RunResult a = run_scenario(one_f_one_b, o), b = run_scenario(zb, o);
    CHECK(b.iteration_time_s > 0.0);
    CHECK(b.breakdown.bubble_s < a.breakdown.bubble_s);
    CHECK(b.iteration_time_s < a.iteration_time_s);
}

TEST_CASE("expert parallelism: the mixture-of-experts presets count their published parameters") {
    const auto preset = [](const std::string& name) {
        ModelSpec m;
        apply_preset(name, m, InputLocation{});
        return m;
    };
    // Mixtral 8x7B: 46.7B parameters, 12.9B active per token (Jiang et al. 2024, §2).
    const ModelSpec mixtral = preset("mixtral-8x7b");
    CHECK(parameter_count(mixtral) == Approx(46.7e9).epsilon(0.01));
    ModelSpec active = mixtral;  // the parameters a token meets: 2 of the 8 experts
    active.experts = 2;
    CHECK(parameter_count(active) == Approx(12.9e9).epsilon(0.01));
    // Mixtral 8x22B: 141B (Mistral AI's model card); Grok-1: 314B (xAI's release).
    CHECK(parameter_count(preset("mixtral-8x22b")) == Approx(141e9).epsilon(0.01));
    CHECK(parameter_count(preset("grok-1")) == Approx(314e9).epsilon(0.01));
    // Qwen3: 30.5B with 3.3B active, 235B with 22B active (Qwen3 report, Table 2), with their
    // attention heads of 128 on hidden sizes of 2048 and 4096 (model.head_dim).
    const ModelSpec qwen3_30b = preset("qwen3-30b-a3b");
    CHECK(parameter_count(qwen3_30b) == Approx(30.5e9).epsilon(0.01));
    ModelSpec qwen3_30b_active = qwen3_30b;
    qwen3_30b_active.experts = qwen3_30b.top_k();
    CHECK(parameter_count(qwen3_30b_active) == Approx(3.3e9).epsilon(0.02));
    const ModelSpec qwen3_235b = preset("qwen3-235b-a22b");
    CHECK(parameter_count(qwen3_235b) == Approx(235e9).epsilon(0.01));
    ModelSpec qwen3_235b_active = qwen3_235b;
    qwen3_235b_active.experts = qwen3_235b.top_k();
    CHECK(parameter_count(qwen3_235b_active) == Approx(22e9).epsilon(0.02));
    // Heads of hidden / heads = 64 instead would halve Q, K, V and the projection: per layer
    // 2 x 2048 x (4096 - 2048) for Q and the projection, 2 x 2048 x (512 - 256) for K and V.
    ModelSpec narrow = qwen3_30b;
    narrow.head_dim = 0;
    CHECK(parameter_count(qwen3_30b) - parameter_count(narrow) == 48.0 * (2 * 2048 * 2048 + 2 * 2048 * 256));
    CHECK(qwen3_30b.top_k() == 8);
}

TEST_CASE("expert parallelism: the routers' row-partial gradients are summed over the tensor group") {
    // Sequence parallelism: each tensor rank routes its own tokens with the whole router, so the
    // router's gradient is partial, summed once per iteration with the RMSNorm scales (fp32
    // gradients): two scales per layer, the final norm's, and h x experts per expert layer.
    Scenario sc = moe_plan(2, 1, 4, 4, 1);
    sc.model.dense_layers = 1;
    const double h = 64;
    const LabelTotals got = label_totals(build_program(sc, validate_plan(sc)), 0);
    CHECK(at(got.bytes, "tp.grad_allreduce") == 4.0 * (kLayers * 2 * h + h + (kLayers - 1) * h * kExperts));
}
