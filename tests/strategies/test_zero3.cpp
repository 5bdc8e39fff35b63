// ZeRO-3 / FSDP programs against closed forms: the bytes each rank gathers, reduce-scatters and
// all-reduces per iteration, the groups they run on, the resident memory, and that folding and
// simulation give the same answer as the full run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/model_math.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr int kMicro = 4;

Scenario zero3(int p, int d, int shard_group) {
    Scenario sc = test::tiny_scenario(1, p, d, kMicro, 4);
    sc.model.swiglu = true;  // untied output layer: no embedding all-reduce between stages
    sc.parallel.zero_stage = 3;
    sc.parallel.shard_group = shard_group;
    return sc;
}

// A mixture-of-experts model (4 experts, top-2, one leading dense layer) under ZeRO-3 with
// expert degree `ep`: the dense parts sharded over the d data ranks, the routed experts over the
// d / ep expert-data ranks.
Scenario zero3_experts(int p, int d, int ep) {
    Scenario sc = zero3(p, d, 0);
    sc.model.experts = 4;
    sc.model.experts_per_token = 2;
    sc.model.expert_ffn_hidden = 128;
    sc.model.dense_layers = 1;
    sc.parallel.expert = ep;
    return sc;
}

std::map<std::string, double> bytes_by_label(const sim::Program& p, std::size_t list) {
    std::map<std::string, double> out;
    for (const sim::Op& op : p.op_lists[list].ops) out[p.labels[op.label]] += op.bytes.value;
    return out;
}

}  // namespace

TEST_CASE("ZeRO 3: every unit gathered before each forward and backward, reduce-scattered after each backward") {
    for (int shard : {0, 2}) {
        const Scenario sc = zero3(2, 4, shard);
        const Layout l = validate_plan(sc);
        const sim::Program prog = build_program(sc, l);
        const StateBytesPerParam state = state_bytes_per_param(sc.training.precision);
        for (int stage = 0; stage < 2; ++stage) {
            const double params = stage_parameters_per_rank(sc.model, l, stage);
            const auto got = bytes_by_label(prog, static_cast<std::size_t>(stage));
            INFO("stage " << stage << " shard group " << shard);
            CHECK(got.at("F.fsdp.allgather") == Approx(kMicro * params * state.weight));
            CHECK(got.at("B.fsdp.allgather") == Approx(kMicro * params * state.weight));
            CHECK(got.at("B.fsdp.reducescatter") == Approx(kMicro * params * state.grad));
            // No ZeRO-1/2 traffic: neither the bucketed reduction nor the gather after the step.
            CHECK(got.count("dp.reducescatter") == 0);
            CHECK(got.count("dp.allgather") == 0);
            if (shard == 0) CHECK(got.count("fsdp.replica_allreduce") == 0);
            else CHECK(got.at("fsdp.replica_allreduce") == Approx(params * state.grad / shard));
        }
    }
}

TEST_CASE("ZeRO 3 of an expert model: dense parts over the shard group, routed experts over the expert-data group") {
    const Scenario sc = zero3_experts(2, 4, 2);
    const Layout l = validate_plan(sc);
    REQUIRE(l.expert_data() == 2);
    const sim::Program prog = build_program(sc, l);
    const StateBytesPerParam state = state_bytes_per_param(sc.training.precision);
    for (int stage = 0; stage < 2; ++stage) {
        const StageParameters params = stage_parameter_split(sc.model, l, stage);
        REQUIRE(params.expert > 0.0);
        const auto got = bytes_by_label(prog, static_cast<std::size_t>(stage));
        INFO("stage " << stage);
        CHECK(got.at("F.fsdp.allgather") == Approx(kMicro * params.dense * state.weight));
        CHECK(got.at("B.fsdp.allgather") == Approx(kMicro * params.dense * state.weight));
        CHECK(got.at("B.fsdp.reducescatter") == Approx(kMicro * params.dense * state.grad));
        CHECK(got.at("F.fsdp.expert_allgather") == Approx(kMicro * params.expert * state.weight));
        CHECK(got.at("B.fsdp.expert_allgather") == Approx(kMicro * params.expert * state.weight));
        CHECK(got.at("B.fsdp.expert_reducescatter") == Approx(kMicro * params.expert * state.grad));
        // Neither ZeRO-1/2's expert reduction nor its gather after the step.
        CHECK(got.count("edp.reducescatter") == 0);
        CHECK(got.count("edp.allreduce") == 0);
        CHECK(got.count("edp.allgather") == 0);
    }
    // The experts' gathers run on the expert-data group's own copy: the same members.
    for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
        const auto& gather = prog.ranks[r].groups[slot::kExpertDataGather];
        const auto& reduce = prog.ranks[r].groups[slot::kExpertData];
        CHECK(gather != reduce);
        CHECK(prog.groups[gather].ranks == prog.groups[reduce].ranks);
        CHECK(prog.groups[gather].ranks.size() == 2);
    }
    // Without expert-data replicas (ep = d) the experts are not sharded: no expert gathers.
    const Scenario whole = zero3_experts(1, 4, 4);
    const auto got = bytes_by_label(build_program(whole, validate_plan(whole)), 0);
    CHECK(got.count("F.fsdp.expert_allgather") == 0);
    CHECK(got.count("B.fsdp.expert_reducescatter") == 0);
    CHECK(got.count("F.fsdp.allgather") == 1);
}

TEST_CASE("ZeRO 3 hybrid sharding of an expert model: routed experts sharded inside each shard group") {
    // 8 data ranks, shard groups of 4, expert degree 2: each shard group holds 2 copies of each
    // expert (its expert shard group), and the 2 shard groups are copies of each other.
    Scenario sc = zero3_experts(2, 8, 2);
    sc.parallel.shard_group = 4;
    const Layout l = validate_plan(sc);
    REQUIRE(l.expert_data() == 4);
    REQUIRE(l.expert_shard_size() == 2);
    const sim::Program prog = build_program(sc, l);
    const StateBytesPerParam state = state_bytes_per_param(sc.training.precision);
    for (int stage = 0; stage < 2; ++stage) {
        const StageParameters params = stage_parameter_split(sc.model, l, stage);
        const auto got = bytes_by_label(prog, static_cast<std::size_t>(stage));
        INFO("stage " << stage);
        CHECK(got.at("F.fsdp.expert_allgather") == Approx(kMicro * params.expert * state.weight));
        CHECK(got.at("B.fsdp.expert_reducescatter") == Approx(kMicro * params.expert * state.grad));
        // The accumulated shard (1/2 of the experts' gradient) all-reduced once with its copy.
        CHECK(got.at("fsdp.expert_replica_allreduce") == Approx(params.expert * state.grad / 2));
        CHECK(got.at("fsdp.replica_allreduce") == Approx(params.dense * state.grad / 4));
    }
    for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
        const auto members = [&](std::uint16_t slot) { return prog.groups[prog.ranks[r].groups[slot]].ranks; };
        const auto shard = members(slot::kExpertShard), copies = members(slot::kExpertReplica);
        const auto experts = members(slot::kExpertData);
        INFO("rank " << r);
        REQUIRE(shard.size() == 2);
        REQUIRE(copies.size() == 2);
        CHECK(members(slot::kExpertDataGather) == shard);
        // Both inside the rank's expert-data group; the shard inside its own shard group (data
        // ranks 0-3 or 4-7), the copies one in each.
        for (std::uint32_t m : shard) CHECK(l.dp_of(m) / 4 == l.dp_of(r) / 4);
        for (std::uint32_t m : copies) CHECK((m == r || l.dp_of(m) / 4 != l.dp_of(r) / 4));
        for (const auto* g : {&shard, &copies})
            for (std::uint32_t m : *g) CHECK(std::find(experts.begin(), experts.end(), m) != experts.end());
    }
    // The routed experts' state divided by the expert shard group (2), not the expert-data group (4).
    const StageParameters params = stage_parameter_split(sc.model, l, 0);
    const StateBytesPerParam dense = sharded_state_bytes_per_param(sc.training, 3, 4);
    const StateBytesPerParam expert = sharded_state_bytes_per_param(sc.training, 3, 2);
    const ResidentMemory hybrid = stage_resident_memory(sc, l, 0);
    Scenario whole = sc;
    whole.parallel.shard_group = 0;
    const ResidentMemory full = stage_resident_memory(whole, validate_plan(whole), 0);
    CHECK(hybrid.optimizer_state_bytes == Approx(params.dense * dense.optimizer + params.expert * expert.optimizer));
    CHECK(hybrid.optimizer_state_bytes - full.optimizer_state_bytes ==
          Approx(params.dense * (dense.optimizer - sharded_state_bytes_per_param(sc.training, 3, 8).optimizer) +
                 params.expert * (expert.optimizer - sharded_state_bytes_per_param(sc.training, 3, 4).optimizer)));
}

TEST_CASE("ZeRO 3 hybrid sharding: shard groups of consecutive data ranks, copies across them") {
    const Scenario sc = zero3(1, 8, 4);
    const Layout l = validate_plan(sc);
    const sim::Program prog = build_program(sc, l);
    for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
        const auto& shard = prog.groups[prog.ranks[r].groups[slot::kShard]].ranks;
        const auto& copies = prog.groups[prog.ranks[r].groups[slot::kReplica]].ranks;
        REQUIRE(shard.size() == 4);
        REQUIRE(copies.size() == 2);
        for (std::uint32_t m : shard) CHECK(l.dp_of(m) / 4 == l.dp_of(r) / 4);
        for (std::uint32_t m : copies) CHECK(l.dp_of(m) % 4 == l.dp_of(r) % 4);
        const std::set<std::uint32_t> both(shard.begin(), shard.end());
        for (std::uint32_t m : copies) CHECK((m == r || both.count(m) == 0));
    }
}

TEST_CASE("ZeRO 3 memory: the state divided by the shard size plus two gathered units and one gradient") {
    for (int shard : {0, 2}) {
        const Scenario sc = zero3(1, 4, shard);
        const Layout l = validate_plan(sc);
        const int s = shard == 0 ? 4 : shard;
        const double params = stage_parameters_per_rank(sc.model, l, 0);
        const StateBytesPerParam state = state_bytes_per_param(sc.training.precision);
        const double unit = std::max({layer_parameter_count_per_rank(sc.model, 1), embedding_parameters_per_rank(sc.model, 1),
                                      head_parameters_per_rank(sc.model, 1, 1)});
        const ResidentMemory r = stage_resident_memory(sc, l, 0);
        CHECK(r.weights_bytes == Approx(params * state.weight / s + 2.0 * unit * state.weight));
        CHECK(r.gradients_bytes == Approx(params * state.grad / s + unit * state.grad));
        CHECK(r.optimizer_state_bytes == Approx(params * state.optimizer / s));
        CHECK(stage_resident_bytes(sc, l, 0).value ==
              Approx(r.weights_bytes + r.gradients_bytes + r.optimizer_state_bytes + r.pipeline_buffers_bytes));
    }
}

TEST_CASE("ZeRO 3 memory of an expert model: experts divided by the expert-data group, their largest unit gathered") {
    const Scenario sc = zero3_experts(1, 4, 2);
    const Layout l = validate_plan(sc);
    const StageParameters params = stage_parameter_split(sc.model, l, 0);
    const StateBytesPerParam state = state_bytes_per_param(sc.training.precision);
    double unit = std::max(embedding_parameters_per_rank(sc.model, 1), head_parameters_per_rank(sc.model, 1, 1));
    for (int g = 0; g < sc.model.layers; ++g) unit = std::max(unit, layer_parameters(sc.model, g, 1, 2, 1).total());
    const ResidentMemory r = stage_resident_memory(sc, l, 0);
    CHECK(r.weights_bytes == Approx(params.dense * state.weight / 4 + params.expert * state.weight / 2 + 2.0 * unit * state.weight));
    CHECK(r.gradients_bytes == Approx(params.dense * state.grad / 4 + params.expert * state.grad / 2 + unit * state.grad));
    CHECK(r.optimizer_state_bytes == Approx(params.dense * state.optimizer / 4 + params.expert * state.optimizer / 2));
}

namespace {

// The run of `sc` folded equals the full one, and folding found symmetry (the shard groups, and
// the experts' shard and copy groups, leave some to fold).
void check_folded_equals_full(const Scenario& sc) {
    RunOptions full;
    full.hardware = hw::Hardware::build(sc.cluster, hw::Catalog::load_builtin());
    RunOptions folded = full;
    folded.fold = true;
    const RunResult a = run_scenario(sc, full), b = run_scenario(sc, folded);
    INFO("shard group " << sc.parallel.shard_group << " experts " << sc.model.experts);
    CHECK(b.sim_fold_factor > 1.0);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.fingerprint == b.fingerprint);
    CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
}

}  // namespace

TEST_CASE("ZeRO 3 runs: the folded simulation equals the full one") {
    for (int shard : {0, 2}) check_folded_equals_full(zero3(2, 4, shard));
    check_folded_equals_full(zero3_experts(2, 4, 2));
    Scenario hybrid = zero3_experts(2, 8, 2);  // hybrid sharding of the experts
    hybrid.parallel.shard_group = 4;
    check_folded_equals_full(hybrid);
}

// The simulator matches the k-th collective of a group across its members whatever the order in
// which each member's streams post, so a group must carry the ops of one stream only (else two
// members can post a gather and a reduce-scatter as the same instance). Checked on every rank of
// ZeRO-3 plans (gathers on their own stream, reduce-scatters on the data stream) and of others.
TEST_CASE("every group carries the communication of one stream only") {
    std::vector<Scenario> plans;
    for (int shard : {0, 2, 4}) plans.push_back(zero3(2, 8, shard));
    plans.push_back(zero3_experts(2, 4, 2));  // the experts' gathers and reduce-scatters too
    Scenario hybrid_experts = zero3_experts(2, 8, 2);  // and their copies' all-reduce
    hybrid_experts.parallel.shard_group = 4;
    plans.push_back(hybrid_experts);
    for (int zero : {0, 1}) {
        Scenario sc = test::tiny_scenario(2, 2, 2, kMicro, 4);
        sc.parallel.zero_stage = zero;
        sc.parallel.sequence_parallel = true;
        plans.push_back(sc);
    }
    // Context parallelism: its exchanges on the context stream, the gradients on the data stream.
    for (const ContextMode mode : {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll}) {
        Scenario sc = test::tiny_scenario(2, 2, 2, kMicro, 4);
        sc.model.attention = AttentionKernel::Fused;
        sc.cluster.gpus_per_node = 16;
        sc.parallel.context = 2;
        sc.parallel.context_mode = mode;
        sc.parallel.zero_stage = 1;
        plans.push_back(sc);
    }
    for (const Scenario& sc : plans) {
        const sim::Program prog = build_program(sc, validate_plan(sc));
        for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
            std::map<std::uint32_t, sim::StreamId> stream_of_group;
            for (const sim::Op& op : prog.op_lists[prog.ranks[r].op_list].ops) {
                if (!sim::is_communication(op.kind)) continue;
                const std::uint32_t group = prog.ranks[r].groups[op.group_slot];
                const auto [it, fresh] = stream_of_group.emplace(group, op.stream);
                INFO("zero " << sc.parallel.zero_stage << " shard group " << sc.parallel.shard_group << " rank " << r
                             << " group " << group << " op " << prog.labels[op.label]);
                CHECK(it->second == op.stream);
            }
        }
    }
}
