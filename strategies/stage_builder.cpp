#include "strategies/stage_builder.hpp"

#include <algorithm>

#include "strategies/edge_ops.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/schedule.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

class StageBuilder {
public:
    StageBuilder(sim::OpList& list, const StagePlan& plan)
        : plan_(plan), l_(*plan.layout), labels_(*plan.layer.labels), e_(list, plan.precision),
          backwards_done_(static_cast<std::size_t>(l_.virtual_stages), 0) {}

    void build() {
        const auto steps = stage_schedule(plan_.schedule, l_.pipeline, l_.micro_batches, l_.virtual_stages, plan_.stage);
        reserve(steps.size());
        for (const PipelineStep& s : steps) s.forward ? forward(s.chunk) : backward(s.chunk);
        if (!plan_.dp_overlap) reduce_gradients(total_params(), e_.last_compute());
        optimizer_step();
    }

private:
    bool data_parallel() const { return l_.data > 1; }

    // One allocation per list: the steps alternate forward and backward over the stage's layers.
    void reserve(std::size_t steps) {
        const std::size_t layers = static_cast<std::size_t>(l_.layers_on_stage(plan_.stage));
        const std::size_t per_pair = plan_.ops_per_layer * layers / static_cast<std::size_t>(l_.virtual_stages) + 32;
        e_.list().ops.reserve(steps / 2 * per_pair + 64);
        e_.list().deps.reserve(steps / 2 * per_pair / 2 + 64);
    }

    sim::Op p2p(OpKind kind, std::uint32_t label, std::uint16_t slot) const {
        const sim::StreamId stream = kind == OpKind::Send ? sim::stream::kPipelineSend : sim::stream::kPipelineRecv;
        return comm_op(kind, label, plan_.message_bytes, stream, slot, OpCategory::PipelineComm);
    }

    void receive(std::uint32_t label, std::uint16_t slot) {
        const std::uint32_t recv = e_.comm(p2p(OpKind::Recv, label, slot), kNoOp);
        if (!plan_.gather_after_recv) return e_.wait_for(recv);
        const double full = plan_.message_bytes * l_.tensor;
        e_.wait_for(e_.comm(comm_op(OpKind::AllGather, labels_.pp_gather, full, sim::stream::kTensorComm,
                                    slot::kTensor, OpCategory::PipelineComm),
                            recv));
    }

    void forward(int chunk) {
        const int n = l_.layers_of(plan_.stage, chunk);
        const bool first = l_.holds_embedding(plan_.stage, chunk), last = l_.holds_head(plan_.stage, chunk);
        if (!first) receive(labels_.recv_act, slot::kActFromPrev);
        if (first) emit_embedding_forward(e_, plan_.layer);
        for (int i = 0; i < n; ++i) emit_layer_forward(e_, plan_.layer);
        if (last) return emit_head_forward(e_, plan_.layer);
        e_.comm(p2p(OpKind::Send, labels_.send_act, slot::kActToNext), e_.last_compute());
    }

    void backward(int chunk) {
        const int n = l_.layers_of(plan_.stage, chunk);
        const bool first = l_.holds_embedding(plan_.stage, chunk), last = l_.holds_head(plan_.stage, chunk);
        const bool final_pass = ++backwards_done_[static_cast<std::size_t>(chunk)] == l_.micro_batches;
        const bool bucketed = final_pass && plan_.dp_overlap && data_parallel();
        double bucket = 0.0;
        const auto add = [&](double params) {
            bucket += params;
            if (bucketed && bucket >= plan_.bucket_params) {
                reduce_gradients(bucket, e_.last_compute());
                bucket = 0.0;
            }
        };
        if (!last) receive(labels_.recv_grad, slot::kGradFromNext);
        if (last) {
            emit_head_backward(e_, plan_.layer);
            add(plan_.head_params);
        }
        for (int i = 0; i < n; ++i) {
            emit_layer_backward(e_, plan_.layer);
            add(plan_.layer_params);
        }
        if (first) {
            emit_embedding_backward(e_, plan_.layer);
            add(plan_.embedding_params);
        } else {
            e_.comm(p2p(OpKind::Send, labels_.send_grad, slot::kGradToPrev), e_.last_compute());
        }
        if (bucketed && bucket > 0.0) reduce_gradients(bucket, e_.last_compute());
    }

    double total_params() const {
        double p = l_.layers_on_stage(plan_.stage) * plan_.layer_params;
        if (plan_.stage == 0) p += plan_.embedding_params;
        if (plan_.stage == l_.pipeline - 1) p += plan_.head_params;
        return p;
    }

    // All-reduce of the gradients (ZeRO 0), or reduce-scatter to the optimizer shards (ZeRO >= 1).
    void reduce_gradients(double params, std::uint32_t after) {
        if (!data_parallel() || params <= 0.0) return;
        const bool sharded = plan_.zero_stage >= 1;
        const sim::Op op = comm_op(sharded ? OpKind::ReduceScatter : OpKind::AllReduce,
                                   sharded ? labels_.dp_reduce_scatter : labels_.dp_allreduce,
                                   params * plan_.grad_bytes_per_param, sim::stream::kDataComm, slot::kData,
                                   OpCategory::DataComm);
        reductions_.push_back(e_.comm(op, after));
    }

    // Adam on the local shard once every gradient is reduced; with ZeRO the updated 16-bit
    // weights are all-gathered back to every replica.
    void optimizer_step() {
        const double params = total_params();
        const double shard = plan_.zero_stage >= 1 ? params / l_.data : params;
        for (std::uint32_t r : reductions_) e_.wait_for(r);
        const std::uint32_t opt = e_.compute(memory_op(OpKind::Optimizer, labels_.optimizer,
                                                       shard * plan_.optimizer_bytes_per_param, OpCategory::Compute));
        if (plan_.zero_stage >= 1 && data_parallel())
            e_.comm(comm_op(OpKind::AllGather, labels_.dp_all_gather, params * plan_.weight_bytes_per_param,
                            sim::stream::kDataComm, slot::kData, OpCategory::DataComm),
                    opt);
    }

    const StagePlan& plan_;
    const Layout& l_;
    const Labels& labels_;
    OpEmitter e_;
    std::vector<int> backwards_done_;
    std::vector<std::uint32_t> reductions_;
};

}  // namespace

double gradient_bucket_params(int data) { return std::max(40e6, 1e6 * data); }

void build_stage(sim::OpList& list, const StagePlan& plan) {
    list.resident = plan.resident;
    StageBuilder(list, plan).build();
}

}  // namespace cuboid
