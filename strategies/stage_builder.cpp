#include "strategies/stage_builder.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "strategies/edge_ops.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/schedule_kinds.hpp"
#include "strategies/tensor_modes/partial_grads.hpp"
#include "strategies/training_state.hpp"

namespace cuboid {
namespace {

using sim::OpCategory;
using sim::OpKind;

class StageBuilder {
public:
    StageBuilder(sim::OpList& list, const StagePlan& plan)
        : plan_(plan), l_(*plan.layout), labels_(*plan.layer.labels), e_(list, plan.precision),
          backwards_done_(static_cast<std::size_t>(l_.virtual_stages), 0),
          pre_checkpointed_(static_cast<std::size_t>(l_.micro_batches), 0),
          grad_received_(static_cast<std::size_t>(l_.micro_batches), 0), split_(splits_backward(plan.schedule)) {
        const Recompute r = plan.layer.recompute;
        plain_ = r == Recompute::None || r == Recompute::Selective ? plan.layer : plan.layer.with_policy(Recompute::None);
        checkpointed_ = plan.layer.with_policy(Recompute::Full);
        after_recompute_ = checkpointed_;
        after_recompute_.recompute = Recompute::None;  // frees what the forward and R allocated
        for (LayerContext* c : {&plain_, &checkpointed_, &after_recompute_}) c->defer_weight_grad = split_;
        // The dense layers of a mixture-of-experts model: the same three contexts with the dense MLP.
        const LayerContext* mine[] = {&plain_, &checkpointed_, &after_recompute_};
        for (std::size_t i = 0; i < 3 && plan.layer.dims.moe; ++i) {
            dense_[i] = *mine[i];
            dense_[i].dims = plan.dense_layer.dims;
            dense_[i].gemms = plan.dense_layer.gemms;
            dense_[i].memory = layer_memory(dense_[i].dims, mine[i] == &plain_ ? plain_.recompute : Recompute::Full);
        }
        e_.set_tags(plan.tags);
    }

    void build() {
        const auto steps = stage_schedule(plan_.schedule, l_.pipeline, l_.micro_batches, l_.virtual_stages, plan_.stage);
        reserve(steps.size());
        for (const PipelineStep& s : steps) {
            e_.set_context(OpTag{-1, s.micro, s.chunk, -1});
            switch (s.pass) {
                case Pass::Forward:
                case Pass::ForwardCkpt: forward(s); break;
                case Pass::Recompute: recompute(s); break;
                case Pass::Backward: backward(s); break;
                case Pass::WeightGrad: weight_grad(s); break;
            }
        }
        e_.set_context(OpTag{});
        const std::uint32_t synced = sync_partial_gradients();
        if (!plan_.dp_overlap) {
            if (!fully_sharded()) reduce_gradients(total_params(), synced == kNoOp ? e_.last_compute() : synced);
            if (!experts_sharded())
                reduce_expert_gradients(total_expert_params(), synced == kNoOp ? e_.last_compute() : synced);
        }
        // After the data stream's reductions, before the step; under ZeRO-3 each copy of the
        // embedding holds the same shard, so the shard is what the two stages sum.
        const double tied = plan_.tied_embedding_params / (fully_sharded() ? l_.shard_size() : 1);
        if (tied > 0.0)
            reductions_.push_back(emit_tied_embedding_grad_sync(e_, labels_, tied * plan_.grad_bytes_per_param,
                                                                {e_.last_compute(), synced}));
        optimizer_step();
    }

private:
    bool data_parallel() const { return l_.data > 1; }
    // Whether global layer `g` is one of a mixture-of-experts model's leading dense layers.
    bool dense_layer(int g) const { return plan_.layer.dims.moe && g < plan_.dense_layers; }
    // The context of global layer `g` among the builder's three (plain_, checkpointed_,
    // after_recompute_): itself, or its dense twin for a dense layer of an expert model.
    const LayerContext& of_layer(const LayerContext& c, int g) const {
        if (!dense_layer(g)) return c;
        if (&c == &plain_) return dense_[0];
        return &c == &checkpointed_ ? dense_[1] : dense_[2];
    }
    double dense_params(int g) const { return dense_layer(g) ? plan_.dense_layer_params : plan_.layer_params; }
    double expert_params(int g) const { return plan_.layer.dims.moe && !dense_layer(g) ? plan_.expert_params : 0.0; }
    // Global index of the i-th layer of a chunk.
    int global_layer(int chunk, int i) const { return l_.first_layer_of(plan_.stage, chunk) + i; }
    // ZeRO-3 over more than one rank: weights gathered per unit, gradients reduce-scattered per unit.
    bool fully_sharded() const { return cuboid::fully_sharded(plan_.zero_stage, l_); }
    // The same for the routed experts, over the expert-data group.
    bool experts_sharded() const { return cuboid::experts_fully_sharded(plan_.zero_stage, l_); }
    // The bytes ZeRO-3 gathers before a unit's pass: its dense weights over the shard group, its
    // routed experts over the expert-data group (0 when that part is not sharded).
    double dense_gather_params(int unit) const { return fully_sharded() ? unit_params(unit) : 0.0; }
    double expert_gather_params(int unit) const {
        return experts_sharded() && unit >= 0 ? expert_params(unit) : 0.0;
    }
    // Ranks the optimizer state (ZeRO >= 1) is sharded over.
    int state_shards() const { return plan_.zero_stage >= 1 ? l_.shard_size() : 1; }

    // The FSDP units of a chunk in forward order: the embedding (first chunk of the first stage),
    // its layers (global indices), the head (last chunk of the last stage).
    std::vector<int> forward_units(int chunk) const {
        std::vector<int> units;
        if (l_.holds_embedding(plan_.stage, chunk)) units.push_back(OpTag::kEmbeddingUnit);
        for (int i = 0; i < l_.layers_of(plan_.stage, chunk); ++i) units.push_back(l_.first_layer_of(plan_.stage, chunk) + i);
        if (l_.holds_head(plan_.stage, chunk)) units.push_back(OpTag::kHeadUnit);
        return units;
    }

    double unit_params(int unit) const {
        if (unit == OpTag::kEmbeddingUnit) return plan_.embedding_params;
        if (unit == OpTag::kHeadUnit) return plan_.head_params;
        return dense_params(unit);
    }

    // ZeRO-3's parameter all-gathers over one pass of a chunk, one unit ahead: the gather of unit
    // i+1 starts once unit i-1's compute is done (FSDP's forward and backward prefetch of one
    // unit; the gathered copy of a unit is freed after its pass), and unit i's first kernel waits
    // for its own gather. Gathers sit on their own stream (stream::kParamGather): a unit's dense
    // weights over the shard group, then its routed experts' shards over the expert-data group.
    // Without ZeRO-3 nothing is emitted.
    class UnitGathers {
    public:
        UnitGathers(StageBuilder& b, const PipelineStep& st, bool forward, std::vector<int> units)
            : b_(b), st_(st), label_(forward ? b.labels_.fsdp_gather_f : b.labels_.fsdp_gather_b),
              expert_label_(forward ? b.labels_.fsdp_expert_gather_f : b.labels_.fsdp_expert_gather_b) {
            for (int u : units)
                if (b_.dense_gather_params(u) > 0.0 || b_.expert_gather_params(u) > 0.0) units_.push_back(u);
            if (!units_.empty()) issue(0);
        }
        void before(int unit) {
            if (next_ >= units_.size() || units_[next_] != unit) return;  // not a unit of this pass
            const std::array<std::uint32_t, 2> mine = issued_.back();
            if (next_ + 1 < units_.size()) issue(next_ + 1);
            ++next_;
            for (std::uint32_t op : mine)
                if (op != kNoOp) b_.e_.wait_for(op);
        }

    private:
        void issue(std::size_t i) {
            const OpTag saved = b_.e_.context();
            b_.e_.set_context(OpTag{units_[i], st_.micro, st_.chunk, -1});
            std::array<std::uint32_t, 2> ops{kNoOp, kNoOp};
            const double dense = b_.dense_gather_params(units_[i]), experts = b_.expert_gather_params(units_[i]);
            const std::uint32_t after = b_.e_.last_compute();
            if (dense > 0.0)
                ops[0] = b_.e_.comm(comm_op(OpKind::AllGather, label_, dense * b_.plan_.weight_bytes_per_param,
                                            stream::kParamGather, slot::kShardGather, comm_class::kData),
                                    after);
            if (experts > 0.0)
                ops[1] = b_.e_.comm(comm_op(OpKind::AllGather, expert_label_, experts * b_.plan_.weight_bytes_per_param,
                                            stream::kParamGather, slot::kExpertDataGather, comm_class::kData),
                                    after);
            issued_.push_back(ops);
            b_.e_.set_context(saved);
        }
        StageBuilder& b_;
        const PipelineStep& st_;
        std::uint32_t label_, expert_label_;
        std::vector<int> units_;
        std::vector<std::array<std::uint32_t, 2>> issued_;  // per issued unit: its dense and expert gathers
        std::size_t next_ = 0;  // the unit whose compute comes next
    };

    // ZeRO-3: the reduce-scatter of a unit's gradient over the shard group right after its
    // backward, every micro-batch (the full gradient is not kept between micro-batches, FSDP's
    // default with gradient accumulation); under hybrid sharding the accumulated shard is then
    // all-reduced between the copies after the last micro-batch. The routed experts' gradient
    // (`experts`, when they are sharded) is reduce-scattered over the expert-data group after it
    // (under hybrid sharding over the expert shard group, then all-reduced between its copies).
    void reduce_unit(const PipelineStep& st, int unit, double params, double experts, bool final_pass) {
        const bool dense = fully_sharded() && params > 0.0, expert = experts_sharded() && experts > 0.0;
        if (!dense && !expert) return;
        const OpTag saved = e_.context();
        e_.set_context(OpTag{unit, st.micro, st.chunk, -1});
        // A part's gradient reduce-scattered over its shard group (the whole reducing group
        // without hybrid sharding) and, after the last micro-batch under hybrid sharding, the
        // accumulated shard of `shards` all-reduced between the copies.
        const auto reduce = [&](double part_params, std::uint32_t scatter, std::uint16_t shard_group,
                                std::uint32_t all_reduce, std::uint16_t copies, int shards) {
            const double bytes = part_params * plan_.grad_bytes_per_param;
            std::uint32_t done = e_.comm(
                comm_op(OpKind::ReduceScatter, scatter, bytes, stream::kDataComm, shard_group, comm_class::kData),
                e_.last_compute());
            if (final_pass && l_.hybrid_sharding())
                done = e_.comm(
                    comm_op(OpKind::AllReduce, all_reduce, bytes / shards, stream::kDataComm, copies, comm_class::kData),
                    done);
            if (final_pass) reductions_.push_back(done);
        };
        if (dense)
            reduce(params, labels_.fsdp_reduce_scatter, slot::kShard, labels_.fsdp_replica_allreduce, slot::kReplica,
                   l_.shard_size());
        if (expert)
            reduce(experts, labels_.fsdp_expert_reduce_scatter, slot::kExpertShard,
                   labels_.fsdp_expert_replica_allreduce, slot::kExpertReplica, l_.expert_shard_size());
        e_.set_context(saved);
    }

    // One allocation per list: the steps alternate forward and backward over the stage's layers.
    void reserve(std::size_t steps) {
        const std::size_t layers = static_cast<std::size_t>(l_.layers_on_stage(plan_.stage));
        const std::size_t per_pair = plan_.ops_per_layer * layers / static_cast<std::size_t>(l_.virtual_stages) + 32;
        e_.list().ops.reserve(steps / 2 * per_pair + 64);
        e_.list().deps.reserve(steps / 2 * per_pair / 2 + 64);
    }

    sim::Op p2p(OpKind kind, std::uint32_t label, std::uint16_t slot) const {
        // ZB-V's sends back up the stages on a stream of their own (group_slots.hpp).
        const sim::StreamId send = slot::way_back(slot) ? stream::kPipelineSendBack : stream::kPipelineSend;
        const sim::StreamId stream = kind == OpKind::Send ? send : stream::kPipelineRecv;
        return comm_op(kind, label, plan_.message_bytes, stream, slot, comm_class::kPipeline);
    }

    // Receives a message (and gathers it over the tensor group); the next compute op waits for
    // it. Returns the op that completes the receipt.
    std::uint32_t receive(std::uint32_t label, std::uint16_t slot) {
        std::uint32_t done = e_.comm(p2p(OpKind::Recv, label, slot), kNoOp);
        if (plan_.gather_after_recv) {
            const double full = plan_.message_bytes * l_.tensor;
            done = e_.comm(comm_op(OpKind::AllGather, labels_.pp_gather, full, stream::kTensorComm,
                                   slot::kTensor, comm_class::kPipeline),
                           done);
        }
        e_.wait_for(done);
        return done;
    }

    // Ops emitted from here on belong to stage-level layer j of the step's chunk (-1: none).
    void at_layer(const PipelineStep& st, int j) {
        const int global = j < 0 ? -1 : l_.first_layer_of(plan_.stage, st.chunk) + j - first_layer(st.chunk);
        e_.set_context(OpTag{global, st.micro, st.chunk, -1});
    }

    // Stage-level index of a chunk's first layer (chunks in local order).
    int first_layer(int chunk) const {
        int j = 0;
        for (int c = 0; c < chunk; ++c) j += l_.layers_of(plan_.stage, c);
        return j;
    }
    enum class LayerPass : std::uint8_t { Forward, Recompute, Backward, WeightGrad };

    void emit_layer_directly(LayerPass pass, const LayerContext& c) {
        switch (pass) {
            case LayerPass::Forward: return emit_layer_forward(e_, c);
            case LayerPass::Recompute: return emit_layer_recompute(e_, c);
            case LayerPass::Backward: return emit_layer_backward(e_, c);
            case LayerPass::WeightGrad: return emit_layer_weight_grad(e_, c);
        }
    }

    // One layer pass under one of the builder's contexts: emitted the first time, replayed after
    // (OpRun, op_emitter.hpp), since all layers are alike. A tagged build emits every layer: its
    // tags differ from layer to layer.
    void emit_layer(LayerPass pass, const LayerContext& c) {
        if (plan_.tags != nullptr) return emit_layer_directly(pass, c);
        for (const RecordedLayer& r : recorded_) {
            if (r.context != &c || r.pass != pass || !e_.can_replay(r.run)) continue;
            if (r.replayable) return e_.replay(r.run);
            return emit_layer_directly(pass, c);
        }
        const OpEmitter::Mark start = e_.mark();
        emit_layer_directly(pass, c);
        RecordedLayer r{&c, pass, false, {}};
        r.replayable = e_.record(start, r.run);
        recorded_.push_back(std::move(r));
    }

    bool checkpointed(int j) const { return j < plan_.checkpointed_layers; }
    // Layers an Fc forward leaves to its R pass.
    bool pre_checkpointed(int j) const { return plan_.scp_whole_stage_recompute || checkpointed(j); }
    const LayerContext& context(int j) const { return checkpointed(j) ? checkpointed_ : plain_; }

    // Merak's stage p-2 sends the activations of micro-batches 1 and 2 only after R_0 / R_1 and
    // the gradient they wait for (seed_algorithms §1.1, communication order of stage p-2).
    bool defers_send(int micro) const {
        return schedule_kind(plan_.schedule).pre_recompute && plan_.stage == l_.pipeline - 2 &&
               (micro == 1 || micro == 2);
    }

    // Where a chunk's input comes from and its output goes (gradients flow the other way): the
    // previous or the next stage, or no stage: the model's ends, and ZB-V's turn on the last stage,
    // where chunk 0's output is chunk 1's input on the same rank.
    enum class Peer : std::uint8_t { None, Prev, Next };
    Peer input_from(int chunk) const {
        if (l_.holds_embedding(plan_.stage, chunk)) return Peer::None;
        if (!l_.v_shape || chunk == 0) return Peer::Prev;
        return plan_.stage == l_.pipeline - 1 ? Peer::None : Peer::Next;
    }
    Peer output_to(int chunk) const {
        if (l_.holds_head(plan_.stage, chunk)) return Peer::None;
        if (!l_.v_shape) return Peer::Next;
        if (chunk == 1) return Peer::Prev;
        return plan_.stage == l_.pipeline - 1 ? Peer::None : Peer::Next;
    }
    static std::uint16_t act_from_slot(Peer p) { return p == Peer::Prev ? slot::kActFromPrev : slot::kActFromNext; }
    static std::uint16_t act_to_slot(Peer p) { return p == Peer::Next ? slot::kActToNext : slot::kActToPrev; }
    static std::uint16_t grad_from_slot(Peer p) { return p == Peer::Next ? slot::kGradFromNext : slot::kGradFromPrev; }
    static std::uint16_t grad_to_slot(Peer p) { return p == Peer::Prev ? slot::kGradToPrev : slot::kGradToNext; }

    void forward(const PipelineStep& st) {
        const int n = l_.layers_of(plan_.stage, st.chunk), base = first_layer(st.chunk);
        const bool first = l_.holds_embedding(plan_.stage, st.chunk), last = l_.holds_head(plan_.stage, st.chunk);
        const bool fc = st.pass == Pass::ForwardCkpt;
        pre_checkpointed_[static_cast<std::size_t>(st.micro)] = fc ? 1 : 0;
        if (const Peer from = input_from(st.chunk); from != Peer::None) receive(labels_.recv_act, act_from_slot(from));
        UnitGathers gathers(*this, st, true, forward_units(st.chunk));
        if (first) {
            gathers.before(OpTag::kEmbeddingUnit);
            emit_embedding_forward(e_, plan_.layer);
        }
        for (int i = 0; i < n; ++i) {
            gathers.before(l_.first_layer_of(plan_.stage, st.chunk) + i);
            at_layer(st, base + i);
            const std::size_t first_op = e_.list().ops.size();
            emit_layer(LayerPass::Forward,
                       of_layer(fc && pre_checkpointed(base + i) ? checkpointed_ : context(base + i), global_layer(st.chunk, i)));
            offload(global_layer(st.chunk, i), first_op);
        }
        at_layer(st, -1);
        if (last) {
            gathers.before(OpTag::kHeadUnit);
            emit_head_forward(e_, plan_.layer);
            for (int k = 0; k < plan_.mtp_layers; ++k) {  // each depth from the previous one's hidden state
                emit_mtp_input_forward(e_, plan_.layer);
                emit_layer(LayerPass::Forward, of_layer(plain_, plan_.last_layer));
                emit_head_forward(e_, plan_.layer);
            }
            return;
        }
        const Peer to = output_to(st.chunk);
        if (to == Peer::None) return;
        if (defers_send(st.micro)) {
            deferred_tags_.push_back(e_.context());
            return deferred_sends_.push_back(e_.last_compute());
        }
        e_.comm(p2p(OpKind::Send, labels_.send_act, act_to_slot(to)), e_.last_compute());
    }

    // R: re-run the pre-checkpointed layers, then wait for the gradient (Merak's R embeds rG).
    void recompute(const PipelineStep& st) {
        const int n = l_.layers_of(plan_.stage, st.chunk), base = first_layer(st.chunk);
        std::vector<int> units;
        for (int i = 0; i < n; ++i)
            if (pre_checkpointed(base + i)) units.push_back(l_.first_layer_of(plan_.stage, st.chunk) + i);
        UnitGathers gathers(*this, st, false, units);
        for (int i = 0; i < n; ++i) {
            if (!pre_checkpointed(base + i)) continue;
            gathers.before(l_.first_layer_of(plan_.stage, st.chunk) + i);
            at_layer(st, base + i);
            emit_layer(LayerPass::Recompute, of_layer(checkpointed_, global_layer(st.chunk, i)));
        }
        at_layer(st, -1);
        const std::uint32_t grad = receive(labels_.recv_grad, slot::kGradFromNext);
        grad_received_[static_cast<std::size_t>(st.micro)] = 1;
        if (deferred_sends_.empty()) return;
        e_.set_context(deferred_tags_.front());  // the send belongs to the deferred micro-batch
        deferred_tags_.erase(deferred_tags_.begin());
        e_.comm(p2p(OpKind::Send, labels_.send_act, slot::kActToNext), {e_.last_compute(), grad});
        deferred_sends_.erase(deferred_sends_.begin());
    }

    const LayerContext& backward_context(int micro, int j) const {
        if (!pre_checkpointed_[static_cast<std::size_t>(micro)]) return context(j);
        return pre_checkpointed(j) ? after_recompute_ : plain_;
    }

    // The gradients of a chunk's units as its backward (or, when the backward is split, its W
    // pass) completes them, in the order given: on the chunk's last micro-batch the overlapped,
    // bucketed data-parallel reduction (Megatron's), and under ZeRO-3 each unit's reduce-scatter.
    class GradientFlow {
    public:
        GradientFlow(StageBuilder& b, const PipelineStep& st)
            : b_(b), st_(st), final_pass_(++b.backwards_done_[static_cast<std::size_t>(st.chunk)] == b.l_.micro_batches),
              bucketed_(final_pass_ && b.plan_.dp_overlap && b.data_parallel() && !b.fully_sharded()),
              experts_bucketed_(final_pass_ && b.plan_.dp_overlap && b.expert_data_parallel() && !b.experts_sharded()) {}
        // `experts`: the unit's routed-expert parameters, bucketed apart (Megatron-Core's DDP keeps
        // the expert-parallel parameters in buffers of their own, reduced over the expert-data group).
        void done(int unit, double params, double experts = 0.0) {
            bucket_ += params;
            if (bucketed_ && bucket_ >= b_.plan_.bucket_params) {
                b_.reduce_gradients(bucket_, b_.e_.last_compute());
                bucket_ = 0.0;
            }
            expert_bucket_ += experts;
            if (experts_bucketed_ && expert_bucket_ >= b_.plan_.bucket_params) {
                b_.reduce_expert_gradients(expert_bucket_, b_.e_.last_compute());
                expert_bucket_ = 0.0;
            }
            b_.reduce_unit(st_, unit, params, experts, final_pass_);
        }
        void finish() {
            if (bucketed_ && bucket_ > 0.0) b_.reduce_gradients(bucket_, b_.e_.last_compute());
            if (experts_bucketed_ && expert_bucket_ > 0.0) b_.reduce_expert_gradients(expert_bucket_, b_.e_.last_compute());
        }

    private:
        StageBuilder& b_;
        const PipelineStep& st_;
        bool final_pass_, bucketed_, experts_bucketed_;
        double bucket_ = 0.0, expert_bucket_ = 0.0;
    };

    void backward(const PipelineStep& st) {
        const int chunk = st.chunk, n = l_.layers_of(plan_.stage, chunk), base = first_layer(chunk);
        const bool first = l_.holds_embedding(plan_.stage, chunk), last = l_.holds_head(plan_.stage, chunk);
        std::optional<GradientFlow> grads;  // split: the W pass completes the gradients
        if (!split_) grads.emplace(*this, st);
        const auto done = [&](int unit, double params, double experts = 0.0) {
            if (grads) grads->done(unit, params, experts);
        };
        const Peer to = output_to(chunk), from = input_from(chunk);
        if (to != Peer::None && !grad_received_[static_cast<std::size_t>(st.micro)])
            receive(labels_.recv_grad, grad_from_slot(to));
        std::vector<int> units = forward_units(chunk);
        std::reverse(units.begin(), units.end());
        UnitGathers gathers(*this, st, false, units);
        if (last) {
            gathers.before(OpTag::kHeadUnit);
            for (int k = 0; k < plan_.mtp_layers; ++k) {  // the deepest module first
                emit_head_backward(e_, plan_.layer);
                emit_layer(LayerPass::Backward, of_layer(plain_, plan_.last_layer));
                emit_mtp_input_backward(e_, plan_.layer);
            }
            emit_head_backward(e_, plan_.layer);
            done(OpTag::kHeadUnit, plan_.head_params, plan_.mtp_expert_params);
        }
        for (int i = n - 1; i >= 0; --i) {  // the last layer back-propagates first
            const int unit = l_.first_layer_of(plan_.stage, chunk) + i;
            gathers.before(unit);
            at_layer(st, base + i);
            reload_before_backward(unit);
            emit_layer(LayerPass::Backward, of_layer(backward_context(st.micro, base + i), unit));
            done(unit, dense_params(unit), expert_params(unit));
        }
        at_layer(st, -1);
        if (first) {
            gathers.before(OpTag::kEmbeddingUnit);
            emit_embedding_backward(e_, plan_.layer);
            done(OpTag::kEmbeddingUnit, plan_.embedding_params);
        } else if (from != Peer::None) {
            e_.comm(p2p(OpKind::Send, labels_.send_grad, grad_to_slot(from)), e_.last_compute());
        }
        if (grads) grads->finish();
    }

    // W: the weight gradients a split backward left, layer by layer in the backward's order. The
    // head and the embedding finished theirs in B; their gradients join the reduction here, in the
    // backward's unit order. W needs no weights, so ZeRO-3 gathers nothing for it.
    void weight_grad(const PipelineStep& st) {
        const int chunk = st.chunk, n = l_.layers_of(plan_.stage, chunk), base = first_layer(chunk);
        GradientFlow grads(*this, st);
        if (l_.holds_head(plan_.stage, chunk)) grads.done(OpTag::kHeadUnit, plan_.head_params);
        for (int i = n - 1; i >= 0; --i) {
            at_layer(st, base + i);
            const int unit = global_layer(chunk, i);
            emit_layer(LayerPass::WeightGrad, of_layer(backward_context(st.micro, base + i), unit));
            grads.done(unit, dense_params(unit), expert_params(unit));
        }
        at_layer(st, -1);
        if (l_.holds_embedding(plan_.stage, chunk)) grads.done(OpTag::kEmbeddingUnit, plan_.embedding_params);
        grads.finish();
    }

    // Activation offloading (StagePlan::activation_offload_layers): after the forward of an
    // offloaded layer, its stored activations (what its forward ops allocated and kept, from
    // `first_op` on) go to host memory on the offload stream, and their GPU copy is released when
    // the copy ends. Memory is walked in issue order, so the release counts right after the layer.
    // Offloading runs without recomputation, so a layer keeps the same bytes every micro-batch.
    bool offloaded(int layer) const { return layer >= 0 && layer < plan_.activation_offload_layers; }
    void offload(int layer, std::size_t first_op) {
        if (!offloaded(layer)) return;
        double kept = 0.0;
        const auto& ops = e_.list().ops;
        for (std::size_t k = first_op; k < ops.size(); ++k) kept += ops[k].memory_alloc.value - ops[k].memory_free.value;
        kept = std::max(kept, 0.0);
        sim::Op copy = memory_op(OpKind::DeviceToHost, labels_.act_offload, kept, comm_class::kOffload);
        copy.stream = stream::kOffload;
        copy.memory_free = Bytes(kept);
        e_.comm(copy, e_.last_compute());
        offloaded_bytes_.resize(static_cast<std::size_t>(plan_.activation_offload_layers), 0.0);
        offloaded_bytes_[static_cast<std::size_t>(layer)] = kept;
    }
    // Before the backward of layer `layer`: the reload of the layer below starts as this layer's
    // backward does (one layer of prefetch, as Transformer Engine's offload synchronizer), and
    // this layer's backward waits for its own reload, issued one layer earlier. A micro-batch's
    // backward runs its layers top down in one pass, so one prefetched reload is in flight.
    void reload_before_backward(int layer) {
        if (plan_.activation_offload_layers == 0) return;
        std::uint32_t mine = kNoOp;
        if (offloaded(layer)) mine = prefetched_layer_ == layer ? prefetched_ : reload(layer);
        prefetched_layer_ = -1;
        if (offloaded(layer - 1)) {
            prefetched_ = reload(layer - 1);
            prefetched_layer_ = layer - 1;
        }
        e_.wait_for(mine);
    }
    std::uint32_t reload(int layer) {
        const double bytes = offloaded_bytes_.at(static_cast<std::size_t>(layer));
        sim::Op copy = memory_op(OpKind::HostToDevice, labels_.act_reload, bytes, comm_class::kOffload);
        copy.stream = stream::kReload;
        copy.memory_alloc = Bytes(bytes);
        return e_.comm(copy, e_.last_compute());
    }

    double total_params() const {
        double p = l_.layers_on_stage(plan_.stage) * plan_.layer_params;
        if (plan_.layer.dims.moe) p = 0.0;  // dense and expert layers differ: layer by layer
        for (int c = 0; c < l_.virtual_stages && plan_.layer.dims.moe; ++c)
            for (int i = 0; i < l_.layers_of(plan_.stage, c); ++i) p += dense_params(global_layer(c, i));
        if (plan_.stage == 0) p += plan_.embedding_params;
        if (plan_.stage == l_.head_stage()) p += plan_.head_params;
        return p;
    }

    // The stage's routed-expert parameters per rank.
    double total_expert_params() const {
        double p = 0.0;
        for (int c = 0; c < l_.virtual_stages; ++c)
            for (int i = 0; i < l_.layers_of(plan_.stage, c); ++i) p += expert_params(global_layer(c, i));
        if (plan_.stage == l_.head_stage()) p += plan_.mtp_expert_params;
        return p;
    }
    bool expert_data_parallel() const { return plan_.layer.dims.moe && l_.expert_data() > 1; }
    int expert_state_shards() const { return plan_.zero_stage >= 1 ? l_.expert_shard_size() : 1; }

    // The routed experts' gradients over the expert-data group, as reduce_gradients does the rest.
    void reduce_expert_gradients(double params, std::uint32_t after) {
        if (!expert_data_parallel() || params <= 0.0) return;
        const bool sharded = plan_.zero_stage >= 1;
        const sim::Op op = comm_op(sharded ? OpKind::ReduceScatter : OpKind::AllReduce,
                                   sharded ? labels_.edp_reduce_scatter : labels_.edp_allreduce,
                                   params * plan_.grad_bytes_per_param, stream::kDataComm, slot::kExpertData,
                                   comm_class::kData);
        reductions_.push_back(e_.comm(op, after));
    }

    // All-reduce of the gradients (ZeRO 0), or reduce-scatter to the optimizer shards (ZeRO >= 1).
    void reduce_gradients(double params, std::uint32_t after) {
        if (!data_parallel() || params <= 0.0) return;
        const bool sharded = plan_.zero_stage >= 1;
        const sim::Op op = comm_op(sharded ? OpKind::ReduceScatter : OpKind::AllReduce,
                                   sharded ? labels_.dp_reduce_scatter : labels_.dp_allreduce,
                                   params * plan_.grad_bytes_per_param, stream::kDataComm, slot::kData,
                                   comm_class::kData);
        reductions_.push_back(e_.comm(op, after));
    }

    // The tensor-parallel all-reduces of the gradients that are partial over a device's rows
    // (tensor_modes/partial_grads.hpp), chained after the last backward; the optimizer waits for
    // them. Returns the last one (kNoOp: none).
    std::uint32_t sync_partial_gradients() {
        const bool head = plan_.stage == l_.head_stage();
        std::uint32_t after = e_.last_compute(), last = kNoOp;
        int moe_layers = 0;
        for (int c = 0; c < l_.virtual_stages && plan_.layer.dims.moe; ++c)
            for (int i = 0; i < l_.layers_of(plan_.stage, c); ++i) moe_layers += dense_layer(global_layer(c, i)) ? 0 : 1;
        for (const PartialGradReduction& r :
             partial_grad_reductions(plan_.layer.dims, l_.layers_on_stage(plan_.stage), head, moe_layers)) {
            const sim::Op op = comm_op(OpKind::AllReduce, labels_.tp_grad_sync, r.params * plan_.grad_bytes_per_param,
                                       stream::kTensorComm, r.slot, comm_class::kTensor);
            after = last = e_.comm(op, after);
            reductions_.push_back(last);
        }
        return last;
    }

    // The optimizer step once every gradient is reduced, on the local shard, as Megatron runs it:
    // under fp16 the loss-scale unscale with its inf/nan check (reads and writes the gradients),
    // the gradient norm for clipping (reads them; the clipping scale itself only runs when the
    // norm exceeds the threshold and is not priced, nor the norm's one-number all-reduce), Adam,
    // and the zeroing of the whole local gradient buffer for the next iteration. With ZeRO the
    // updated 16-bit weights are all-gathered back to every replica.
    void optimizer_step() {
        const double params = total_params(), experts = total_expert_params();
        const double shard = params / state_shards() + experts / expert_state_shards();
        const double grads = shard * plan_.grad_bytes_per_param;
        for (std::uint32_t r : reductions_) e_.wait_for(r);
        if (plan_.precision == sim::Precision::Fp16)
            e_.compute(memory_op(OpKind::Elementwise, labels_.unscale, 2.0 * grads, OpCategory::Compute));
        e_.compute(memory_op(OpKind::Elementwise, labels_.grad_norm, grads, OpCategory::Compute));
        const std::uint32_t opt = plan_.optimizer_offload
                                      ? offloaded_step(shard, grads)
                                      : e_.compute(memory_op(OpKind::Optimizer, labels_.optimizer,
                                                             shard * plan_.optimizer_bytes_per_param, OpCategory::Compute));
        if (plan_.zero_stage >= 1 && plan_.zero_stage < 3 && data_parallel())
            e_.comm(comm_op(OpKind::AllGather, labels_.dp_all_gather, params * plan_.weight_bytes_per_param,
                            stream::kDataComm, slot::kData, comm_class::kData),
                    opt);
        if (plan_.zero_stage >= 1 && plan_.zero_stage < 3 && expert_data_parallel() && experts > 0.0)
            e_.comm(comm_op(OpKind::AllGather, labels_.edp_all_gather, experts * plan_.weight_bytes_per_param,
                            stream::kDataComm, slot::kExpertData, comm_class::kData),
                    opt);
        // ZeRO-3 keeps only the gradient shard between iterations; the others the whole buffer.
        const double zeroed = plan_.zero_stage == 3 ? shard : params + experts;
        e_.compute(memory_op(OpKind::Elementwise, labels_.zero_grad, zeroed * plan_.grad_bytes_per_param,
                             OpCategory::Compute));
    }

    // The step on the host (training.optimizer_offload), one after the other as the GPU waits: the
    // gradient shard to host memory, Adam over the host's copy of the state (the bytes the GPU's
    // step would move), the updated 16-bit weights back. Returns the last.
    std::uint32_t offloaded_step(double shard, double grads) {
        e_.compute(memory_op(OpKind::DeviceToHost, labels_.offload_d2h, grads, OpCategory::Compute));
        e_.compute(memory_op(OpKind::HostOptimizer, labels_.optimizer_host, shard * plan_.optimizer_bytes_per_param,
                             OpCategory::Compute));
        return e_.compute(memory_op(OpKind::HostToDevice, labels_.offload_h2d, shard * plan_.weight_bytes_per_param,
                                    OpCategory::Compute));
    }

    const StagePlan& plan_;
    const Layout& l_;
    const Labels& labels_;
    OpEmitter e_;
    std::vector<int> backwards_done_;
    std::vector<char> pre_checkpointed_;  // per micro-batch: forwarded as Fc
    std::vector<char> grad_received_;     // per micro-batch: its R already received the gradient
    bool split_;                          // B and W are separate passes (splits_backward)
    std::vector<std::uint32_t> deferred_sends_;  // activation sends waiting for the next R
    std::vector<OpTag> deferred_tags_;           // and the micro-batches they carry
    std::vector<std::uint32_t> reductions_;
    // Activation offloading: the bytes each offloaded layer copies out, and the reload issued
    // ahead of its layer's backward (prefetched_layer_ -1: none).
    std::vector<double> offloaded_bytes_;
    std::uint32_t prefetched_ = kNoOp;
    int prefetched_layer_ = -1;
    LayerContext plain_, checkpointed_, after_recompute_;
    LayerContext dense_[3];  // their dense twins (mixture of experts), in that order
    // Layer passes emitted so far, by context (one of the three above), pass and start shape.
    struct RecordedLayer {
        const LayerContext* context;
        LayerPass pass;
        bool replayable;  // false: record() could not express it, emit it each time
        OpRun run;
    };
    std::vector<RecordedLayer> recorded_;
};

}  // namespace

double gradient_bucket_params(int data) { return std::max(40e6, 1e6 * data); }

void build_stage(sim::OpList& list, const StagePlan& plan) {
    list.resident = plan.resident;
    StageBuilder(list, plan).build();
}

}  // namespace cuboid
