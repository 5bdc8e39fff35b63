// Small scenarios and zero-cost pricing for the strategies tests.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>

#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/transfer.hpp"
#include "hardware_models/errors.hpp"
#include "strategies/layout.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::test {

// A tiny GPT (fast to build and simulate) on one node of t*p*d GPUs.
inline Scenario tiny_scenario(int t, int p, int d, int m, int layers = 8) {
    Scenario sc;
    sc.name = "tiny";
    sc.model.layers = layers;
    sc.model.hidden = 64;
    sc.model.heads = 4;
    sc.model.seq_len = 32;
    sc.model.vocab = 128;
    sc.cluster.nodes = 1;
    sc.cluster.gpus_per_node = t * p * d;
    sc.training.micro_batch = 1;
    sc.training.global_batch = m * d;
    sc.parallel.tensor = t;
    sc.parallel.pipeline = p;
    sc.parallel.data = d;
    return sc;
}

// The tiny model as Megatron-Core with Transformer Engine runs it, on one stage and one replica:
// rotary (SwiGLU) layers, fused attention without dropout, TE's passes, fp8.
inline Scenario te_fp8_scenario(int t, int m, int layers) {
    Scenario sc = tiny_scenario(t, 1, 1, m, layers);
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.transformer_engine = true;
    sc.training.precision = sim::Precision::Fp8;
    return sc;
}

// The tiny GPT, wider (hidden 256, sequence 128), on `nodes` DGX-like nodes of t*p*d / nodes GPUs
// (one node: NVSwitch only), with `schedule` (interleaved: 2 virtual stages).
inline Scenario cluster_scenario(int t, int p, int d, int nodes, Schedule schedule = Schedule::OneFOneB) {
    Scenario sc = tiny_scenario(t, p, d, 4, 8);
    sc.model.hidden = 256;
    sc.model.seq_len = 128;
    sc.cluster.nodes = nodes;
    sc.cluster.gpus_per_node = t * p * d / nodes;
    sc.parallel.schedule = schedule;
    if (schedule == Schedule::Interleaved) sc.parallel.virtual_stages = 2;
    return sc;
}

// Communication costs nothing: every transfer is a plan without phases.
class FreePlanner : public sim::TransferPlanner {
public:
    const sim::TransferPlan& plan(const sim::TransferRequest&) override { return empty_; }

private:
    sim::TransferPlan empty_;
};

// Prices only the GEMMs of transformer layers: `unit` per forward GEMM and per backward GEMM
// (input and weight gradient each), 0 for everything else (embedding, logits, memory-bound
// kernels, optimizer). A layer's forward then takes 6 units and its backward 12 (t_B = 2 t_F).
inline sim::ProgramCosts layer_gemm_costs(const sim::Program& p, Time unit) {
    sim::ProgramCosts c;
    for (const auto& list : p.op_lists) {
        auto& d = c.durations.emplace_back(list.ops.size(), Time(0));
        for (std::size_t i = 0; i < list.ops.size(); ++i) {
            const sim::Op& op = list.ops[i];
            const std::string& label = p.labels[op.label];
            const bool edge = label.find("logits") != std::string::npos;
            if (sim::is_gemm(op.kind) && !edge && label[0] != 'R') d[i] = unit;
        }
    }
    return c;
}

// The key at which validate_plan rejects `base` after `change`, or "" when it accepts it.
inline std::string rejected_key(Scenario base, const std::function<void(Scenario&)>& change) {
    change(base);
    try {
        validate_plan(base);
    } catch (const InputError& e) {
        return e.where().key;
    }
    return "";
}

// Per label of one op list: the ops' summed bytes, FLOPs, allocations and releases, and their
// count (closed-form checks of what a layer emits).
struct LabelTotals {
    std::map<std::string, double> bytes, flops, alloc, freed;
    std::map<std::string, int> count;
};

inline LabelTotals label_totals(const sim::Program& p, std::size_t list) {
    LabelTotals out;
    for (const sim::Op& op : p.op_lists[list].ops) {
        const std::string& l = p.labels[op.label];
        out.bytes[l] += op.bytes.value;
        out.flops[l] += op.flops.value;
        out.alloc[l] += op.memory_alloc.value;
        out.freed[l] += op.memory_free.value;
        out.count[l] += 1;
    }
    return out;
}

// The entry of `key`, 0 when no op has that label.
template <class V>
V at(const std::map<std::string, V>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? V{} : it->second;
}

// Every op list releases what its ops allocate (memory conservation over an iteration).
inline void check_allocations_released(const sim::Program& p) {
    for (const sim::OpList& list : p.op_lists) {
        double alloc = 0.0, freed = 0.0;
        for (const sim::Op& op : list.ops) {
            alloc += op.memory_alloc.value;
            freed += op.memory_free.value;
        }
        CHECK(alloc == Approx(freed).epsilon(1e-12));
    }
}

// Two simulations of one program agree on everything a user sees: the makespan, the fingerprint,
// and every rank's finish and breakdown.
inline void check_same_outcome(const sim::SimResult& a, const sim::SimResult& b) {
    CHECK(a.makespan == b.makespan);
    CHECK(a.fingerprint == b.fingerprint);
    REQUIRE(a.ranks.size() == b.ranks.size());
    for (std::size_t i = 0; i < a.ranks.size(); ++i) {
        INFO("rank " << i);
        const sim::RankOutcome& x = a.ranks[i];
        const sim::RankOutcome& y = b.ranks[i];
        CHECK(x.finish == y.finish);
        CHECK(x.breakdown.compute == y.breakdown.compute);
        CHECK(x.breakdown.recompute == y.breakdown.recompute);
        CHECK(x.breakdown.comm_exposed == y.breakdown.comm_exposed);
        CHECK(x.breakdown.bubble == y.breakdown.bubble);
    }
}

}  // namespace cuboid::test
