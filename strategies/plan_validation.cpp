// validate_plan: every way a scenario's plan can be impossible, each reported at its key.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "strategies/plan_checker.hpp"

#include "sim/checked_math.hpp"

#include "strategies/layout.hpp"
#include "strategies/partition/stage_partition.hpp"
#include "strategies/schedule.hpp"
#include "strategies/tensor_modes/mode_validation.hpp"
#include "strategies/work_estimate.hpp"

namespace cuboid {
namespace {

using std::to_string;

using Checker = PlanChecker;

void check_model(const Checker& c, const ModelSpec& m) {
    c.require(m.layers > 0, "model.layers", "must be a positive number of layers");
    c.require(m.hidden > 0, "model.hidden", "must be a positive hidden size");
    c.require(m.heads > 0, "model.heads", "must be a positive number of attention heads");
    c.require(m.seq_len > 0, "model.seq_len", "must be a positive sequence length");
    c.require(m.vocab > 0, "model.vocab", "must be a positive vocabulary size");
    c.require(m.hidden % m.heads == 0, "model.heads",
              "hidden " + to_string(m.hidden) + " is not a multiple of heads " + to_string(m.heads));
    const int kv = m.kv_heads_or_default();
    c.require(kv > 0 && m.heads % kv == 0, "model.kv_heads",
              "must divide heads " + to_string(m.heads) + " (got " + to_string(kv) + ")");
    c.require(m.ffn_hidden >= 0, "model.ffn_hidden", "must be positive (0: 4 * hidden)");
}

// The fused kernels of FlashAttention and cuDNN run in fp16 / bf16 (fp8 training keeps the
// attention 16-bit); the 2d, 3d and ATP layer programs model their papers' unfused attention.
void check_attention(const Checker& c, const Scenario& sc) {
    if (sc.model.attention != AttentionKernel::Fused) return;
    const sim::Precision p = sc.training.precision;
    c.require(p != sim::Precision::Fp32 && p != sim::Precision::Tf32, "model.attention",
              "fused attention kernels run in fp16 or bf16; with fp32 or tf32 training use model.attention: unfused");
    c.require(sc.parallel.tensor_mode == TensorMode::OneD || sc.parallel.tensor <= 1, "model.attention",
              "fused attention is modelled with 1d tensor parallelism; the 2d, 3d and atp layer programs run "
              "their papers' unfused attention: set model.attention: unfused (or training.framework: megatron-2021)");
}

void check_unsupported(const Checker& c, const ParallelPlan& p) {
    c.require(p.zero_stage >= 0 && p.zero_stage <= 3, "parallel.zero_stage", "allowed: 0, 1, 2, 3");
    c.require(p.shard_group >= 0, "parallel.shard_group", "must be at least 1 (or absent: all data-parallel ranks)");
}

int check_degrees(const Checker& c, const Scenario& sc) {
    const ParallelPlan& p = sc.parallel;
    // 64-bit products: a wrapped one could pass as a small valid cluster or degree.
    const std::int64_t gpus = sc.cluster.gpus();
    c.require(gpus > 0, "cluster.nodes", "the cluster has no GPUs");
    c.require(gpus <= hw::kMaxClusterGpus, "cluster.nodes",
              "nodes " + to_string(sc.cluster.nodes) + " x gpus_per_node " + to_string(sc.cluster.gpus_per_node) +
                  " = " + to_string(gpus) + " GPUs; cuboid models at most " + to_string(hw::kMaxClusterGpus) + " GPUs");
    c.require(p.tensor >= 1, "parallel.tensor", "must be at least 1");
    c.require(p.pipeline >= 1, "parallel.pipeline", "must be at least 1");
    c.require(p.data >= 0, "parallel.data", "must be at least 1 (or absent: derived)");
    const std::int64_t tp = std::int64_t{p.tensor} * p.pipeline;  // both >= 1 and below 2^31: fits
    if (p.data == 0) {
        c.require(gpus % tp == 0, "parallel.pipeline",
                  "tensor*pipeline = " + to_string(tp) + " does not divide the " + to_string(gpus) + " GPUs");
        return static_cast<int>(gpus / tp);
    }
    const std::optional<std::int64_t> total = sim::checked_mul(tp, std::int64_t{p.data});
    c.require(total && *total == gpus, "parallel.data",
              "tensor*pipeline*data = " + (total ? to_string(*total) : "more than 2^63") + " but the cluster has " +
                  to_string(gpus) + " GPUs");
    return p.data;
}

// A GPU's rack-scale system (GB200 NVL72) gives the domain when the scenario does not: then the
// error stands at cluster.gpu, which brought the domain, and says what to write instead.
void check_scale_up_domain(const Checker& c, const Scenario& sc) {
    const std::optional<std::string> problem = hw::scale_up_domain_problem(sc.cluster);
    if (!problem) return;
    const auto& system = sc.cluster_choices.system;
    if (sc.cluster_choices.scale_up_domain || !system) c.require(false, "cluster.scale_up_domain", *problem);
    InputLocation at_gpu = sc.where("cluster.gpu");
    at_gpu.key = "cluster.scale_up_domain";
    throw InputError(at_gpu, *problem + "; " + to_string(system->scale_up_domain) + " is the NVLink domain of " +
                                 system->name + " (cluster.gpu " + sc.cluster.gpu +
                                 "): set cluster.scale_up_domain to the GPUs of the NVLink domain the job's nodes share");
}

void check_tensor(const Checker& c, const Scenario& sc) {
    const int t = sc.parallel.tensor;
    const int gpn = sc.cluster.gpus_per_node;
    const int domain = sc.cluster.domain_gpus();
    const ModelSpec& m = sc.model;
    // A tensor group must tile nodes: whole groups inside a node, or whole nodes per group.
    c.require(gpn % t == 0 || t % gpn == 0, "parallel.tensor",
              "tensor " + to_string(t) + " must divide gpus_per_node " + to_string(gpn) + " or be a multiple of it");
    // ... and NVLink domains: the tensor group is innermost in the rank order, so a size that
    // divides the domain keeps every group on NVLink (Megatron's placement).
    c.require(domain % t == 0 || t % domain == 0, "parallel.tensor",
              "tensor " + to_string(t) + " must divide cluster.scale_up_domain " + to_string(domain) +
                  " or be a multiple of it, so that no tensor group straddles two NVLink domains");
    // Megatron's 1d splits heads and MLP columns t ways; the other modes check their mesh's
    // splits (strategies/tensor_modes/mode_validation.cpp).
    const bool one_d = sc.parallel.tensor_mode == TensorMode::OneD;
    c.require(!one_d || m.heads % t == 0, "parallel.tensor",
              "must divide the " + to_string(m.heads) + " attention heads");
    c.require(!one_d || m.kv_heads_or_default() % t == 0, "parallel.tensor",
              "must divide the " + to_string(m.kv_heads_or_default()) + " key/value heads");
    c.require(!one_d || m.ffn_or_default() % t == 0, "parallel.tensor",
              "must divide the MLP size " + to_string(m.ffn_or_default()));
    if (sc.parallel.sequence_parallel)
        c.require(m.seq_len % t == 0, "parallel.sequence_parallel",
                  "sequence parallelism needs seq_len " + to_string(m.seq_len) + " divisible by tensor " + to_string(t));
    // Sub-pipelined tensor parallelism (Merak) cuts each micro-batch into k equal sub-batches of
    // whole sequences (k | micro_batch, Merak's cut along the batch) or of s/k positions of every
    // sequence (k | seq_len), so every sub-batch runs the same GEMM shapes.
    const int k = sc.parallel.overlap_chunks, b = sc.training.micro_batch;
    c.require(k >= 1, "parallel.overlap_chunks", "must be at least 1");
    c.require(b % k == 0 || m.seq_len % k == 0, "parallel.overlap_chunks",
              "the " + to_string(k) + " sub-batches must split the micro-batch's tokens evenly: k must divide micro_batch " +
                  to_string(b) + " or seq_len " + to_string(m.seq_len));
}

void check_pipeline(const Checker& c, const Scenario& sc, int micro_batches) {
    const ParallelPlan& p = sc.parallel;
    c.require(p.virtual_stages >= 1, "parallel.virtual_stages", "must be at least 1");
    if (p.schedule == Schedule::Interleaved) {
        c.require(p.virtual_stages > 1, "parallel.virtual_stages",
                  "the interleaved schedule needs virtual_stages > 1 (use 1f1b for 1)");
        c.require(p.pipeline > 1, "parallel.pipeline", "the interleaved schedule needs pipeline > 1");
        c.require(micro_batches % p.pipeline == 0, "training.global_batch",
                  "the interleaved schedule needs micro-batches (" + to_string(micro_batches) +
                      ") to be a multiple of pipeline " + to_string(p.pipeline));
    } else {
        c.require(p.virtual_stages == 1, "parallel.virtual_stages",
                  "virtual stages > 1 need schedule: interleaved");
    }
    if (p.schedule == Schedule::ShiftedCriticalPath) {
        if (const auto why = scp_unsupported_reason(p.pipeline, micro_batches)) c.require(false, "parallel.schedule", *why);
        c.require(p.recompute == Recompute::Full || p.recompute == Recompute::StageAware, "parallel.recompute",
                  "shifted-critical-path pre-recomputes checkpointed micro-batches in the bubbles, so it needs "
                  "recompute: full or stage-aware (got " + to_string(p.recompute) + ")");
    }
    const std::int64_t chunks = std::int64_t{p.pipeline} * p.virtual_stages;
    c.require(sc.model.layers >= chunks, "parallel.pipeline",
              "pipeline*virtual_stages = " + to_string(chunks) + " exceeds the " +
                  to_string(sc.model.layers) + " layers (each chunk needs a layer)");
}

// The layout of a valid plan; `builtin`: the built-in catalog when loaded (else the partitioner
// loads it when it needs it).
Layout validated(const Scenario& sc, const hw::Catalog* builtin) {
    const Checker c(sc);
    check_model(c, sc.model);
    check_unsupported(c, sc.parallel);
    check_attention(c, sc);
    const int data = check_degrees(c, sc);
    check_scale_up_domain(c, sc);
    const int sg = sc.parallel.shard_group;
    c.require(sg == 0 || data % sg == 0, "parallel.shard_group",
              to_string(sg) + " must divide the data-parallel degree " + to_string(data));
    c.require(sg == 0 || sg == data || sc.parallel.zero_stage == 3, "parallel.shard_group",
              "hybrid sharding (a shard group smaller than the data-parallel degree " + to_string(data) +
                  ") shards the weights: it needs parallel.zero_stage: 3");
    check_tensor(c, sc);
    const TensorMesh mesh = check_tensor_mode(sc, builtin);
    const TrainingSpec& tr = sc.training;
    c.require(tr.micro_batch >= 1, "training.micro_batch", "must be at least 1");
    // A GEMM's rows are a micro-batch's tokens, and an attention GEMM's batch its sequences times
    // heads; an op stores them in 32 bits (sim::PackedGemmShape).
    constexpr std::int64_t kLargestDimension = std::numeric_limits<std::int32_t>::max();
    const std::int64_t tokens = std::int64_t{tr.micro_batch} * sc.model.seq_len;
    c.require(tokens <= kLargestDimension, "training.micro_batch",
              "micro_batch x seq_len = " + to_string(tokens) + " tokens exceeds " + to_string(kLargestDimension) +
                  ", the largest GEMM dimension cuboid models");
    const std::int64_t products = std::int64_t{tr.micro_batch} * sc.model.heads;
    c.require(products <= kLargestDimension, "training.micro_batch",
              "micro_batch x heads = " + to_string(products) + " attention products exceeds " +
                  to_string(kLargestDimension) + ", the largest GEMM batch cuboid models");
    c.require(tr.global_batch >= 1, "training.global_batch", "must be at least 1");
    const std::int64_t per_step = std::int64_t{tr.micro_batch} * data;  // both below 2^31: fits
    c.require(tr.global_batch % per_step == 0, "training.global_batch",
              "must be a multiple of micro_batch*data = " + to_string(per_step));
    const auto m = static_cast<int>(tr.global_batch / per_step);
    check_pipeline(c, sc, m);
    // Before the partition and the program are built: both grow with the plan's size.
    check_work(sc, data, m);

    Layout l;
    l.tensor = sc.parallel.tensor;
    l.pipeline = sc.parallel.pipeline;
    l.data = data;
    l.data_shard = sc.parallel.shard_group == data ? 0 : sc.parallel.shard_group;
    l.virtual_stages = sc.parallel.virtual_stages;
    l.tensor_mesh = mesh.axes;
    l.tensor_order = mesh.order;
    l.micro_batches = m;
    l.chunk_layers = stage_partition(sc, l, builtin);
    return l;
}

}  // namespace

Layout validate_plan(const Scenario& sc) { return validated(sc, nullptr); }

Layout validate_plan(const Scenario& sc, const hw::Catalog& builtin) { return validated(sc, &builtin); }

}  // namespace cuboid
