// One rank of the program, run on one thread: its ops in list order, each interpreted from its
// label, its tag (layer, micro-batch, chunk) and the rank's (tensor, data, stage) coordinates.
//
// Ops run one at a time in program order, which is a valid order of every stream together
// (dependencies point to earlier ops; sends are buffered, so only receives and collectives
// wait). Data moves only through communication ops: a missing all-reduce leaves its "reduced"
// tensor absent, a missing recomputation leaves a dropped activation absent, and the op that
// needs it stops the run with the op's name.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "validate/cpu/atp_split.hpp"
#include "validate/cpu/blockwise_attention.hpp"
#include "validate/cpu/fabric.hpp"
#include "validate/cpu/kernels.hpp"
#include "validate/cpu/moe_math.hpp"
#include "validate/cpu/op_codes.hpp"
#include "validate/cpu/param_buckets.hpp"
#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

// Tensors a layer (or the embedding / head) keeps between its ops for one micro-batch.
enum class Field : std::uint8_t {
    X, Ln1, Ln1Full, Q, K, V, Scores, Probs, ProbsD, Ctx, ProjPartial, ProjRed, H1, Ln2, Ln2Full, A1, G1,
    Fc2Partial, Fc2Red,
    GOut, GOutFull, DG1, DA1, Ln2Regather, DLn2Partial, DLn2, GH1, GProj, GProjFull, DCtx, DProbsD, DProbs,
    DScores, DQ, DK, DV, Ln1Regather, DLn1Partial, DLn1,
    EmbPartial, EmbRed, GEmb, GEmbFull,
    LnfIn, Lnf, LnfFull, Logits, XentMax, XentTarget, XentSumExp, XentDone, DLogits, DLnfPartial, DLnf,
    // ATP (atp_exec.cpp): LayerNorm statistics of the hidden block and partial linear outputs.
    Stats1, Stats1Sum, Stats2, Stats2Sum, QkvPartial, QkvRed, Fc1Partial, Fc1Red, DG1Partial, DCtxPartial,
    DStats1, DStats1Sum, DStats2, DStats2Sum,
    // 3d (cube_exec.cpp): inputs and output gradients of the linears gathered over an axis.
    CtxFull, G1Full, DA1Full, DQkvFull,
    // ATP's chunks (atp_chunk_exec.cpp): the layer's output, assembled from its chunks' rows.
    Out,
    // Context parallelism (context_exec.cpp): the attention's log-sum-exp; a ring step's partial
    // output and the running merge; K/V of every position (all-gather) and their gradients; the
    // head-split tensors of the all-to-all mode; the ring's outgoing partial dK/dV.
    Lse, StepOut, StepLse, OutAcc, LseAcc, KvAll, DKvAll, QH, KH, VH, OH, DCtxH, DQH, DKH, DVH, DkvOut,
    // Mixture of experts (moe_exec.cpp): the router's logits and the chosen experts' weights; the
    // token copies on their way to the experts (MoeIn) and back (MoeBack), each row tagged with
    // its expert and origin; the experts' input, FC1 output, activation and the combined outputs;
    // the routed output; the shared experts' FC1 output, activation and (partial, reduced) output;
    // the backward's gradients of these.
    RouterLogits, RouteWeights, MoeIn, MoeBack, ExpertX, ExpertA, ExpertG, ExpertY, MoeOut,
    SharedA1, SharedG1, SharedPartial, SharedRed,
    DRoute, DRouterLogits, DExpertY, DExpertG, DExpertA, DLn2Routed, DSharedG1, DSharedA1,
};
const char* field_name(Field f);

// What every rank shares: the program, its tags and the run's inputs.
struct RunContext {
    const sim::Program* program = nullptr;
    const ProgramTags* tags = nullptr;
    const Layout* layout = nullptr;
    GptDims dims;
    const Batch* batch = nullptr;
    std::vector<OpCode> codes;  // per label
    int micro_batch = 1;        // sequences per micro-batch
    int overlap_chunks = 1;     // sub-batches a layer runs its micro-batch as (layer_shapes.hpp sub_batch_dims)
    std::vector<int> token_order;  // row of a micro-batch's activation -> sequence * seq + position (micro_batch_rows)
    bool sp = false;            // sequence parallelism
    int atp_column_axis = -1;   // ATP's own layer program: its column axis (atp_split.hpp); -1: not ATP
    int atp_chunks = 1;         // ATP's overlap chunks (strategies/tensor_modes/mode_layer.cpp; atp_chunk_exec.cpp)
    bool summa = false;         // 2d tensor mode (summa_exec.cpp)
    bool cube = false;          // 3d tensor mode (cube_exec.cpp)
    double learning_rate = 0.1;
    int zero_stage = 0;         // ZeRO stage of the plan (3: fsdp_exec.cpp)
    int context = 1;            // context-parallel degree c: a rank holds s/c positions of each sequence
    Fabric* fabric = nullptr;
};

// What a rank ends with.
struct RankOutcome {
    GptParams weights, grads, owned;  // owned: 1 where this data-parallel rank holds the reduced gradient
    std::vector<int> blocks;          // blocks it holds
    double loss = 0.0;                // its share of the mean loss (last stage)
    double recompute_diff = 0.0;      // largest |recomputed - first computed| activation
};

// Row order of a micro-batch's [b*s, h] activation: for each of `blocks` row blocks (the t ranks
// under sequence parallelism, else 1), the block of each of the k sub-batches in turn, a
// sub-batch's tokens being whole sequences (k | b) or s/k positions of every sequence. Then a
// rank's rows cut into k equal parts are its rows of each sub-batch, and gathering one part over
// the tensor group gives the sub-batch's tokens in (sequence, position) order. Identity for k = 1.
std::vector<int> micro_batch_rows(int b, int s, int k, int blocks);

// Row order of a micro-batch's activation under ATP's c overlap chunks (atp_chunk_exec.cpp): for
// each chunk, for each of the `groups` devices whose attention cores split the micro-batch (dr
// under the token split, else 1), that device's tokens of the chunk: b/(groups c) of its b/groups
// whole sequences when c divides them, else s/c positions of each of them. Then chunk k's rows are
// row block k of c, and row block j of dr of those is what device j of the hidden axis keeps after
// the chunk's reduce-scatter. Identity for c = 1.
std::vector<int> atp_chunk_rows(int b, int s, int c, int groups);

class RankRunner {
public:
    RankRunner(const RunContext& ctx, std::uint32_t rank, const GptParams& full_params);
    void run();  // throws std::runtime_error naming the op on the first error
    RankOutcome outcome() && { return std::move(out_); }

private:
    using Cache = std::map<Field, Mat>;
    using Key = std::tuple<int, int, int>;  // (micro-batch, layer or block, sub-batch)
    using Pos = std::pair<int, int>;        // (micro-batch, layer position of the residual stream)

    void execute(std::uint32_t index, const sim::Op& op, const OpCode& code, const OpTag& tag);
    // sub_batch_exec.cpp: a layer's sub-batches (overlap_chunks) and the keys their queries attend to.
    int sub_of(const OpTag& tag) const;
    Key layer_key(const OpTag& tag) const { return {tag.micro, tag.layer, sub_of(tag)}; }
    Mat piece(std::map<Pos, Mat>& whole, std::map<Key, Mat>& pieces, const Key& k, const char* what);
    bool join(std::map<Pos, Mat>& whole, std::map<Key, Mat>& pieces, const Key& k, Mat part);
    AttnShape attn_shape(int sub) const;
    // Parts a layer's attention core runs in (Megatron's sub-batches or ATP's chunks) and the
    // sequences they split (ATP's token split: the device's b/dr).
    int subs() const { return std::max(k_, chunks_); }
    int sub_seqs() const;
    bool sequence_split() const { return subs() > 1 && sub_seqs() % subs() != 0; }
    Mat attended(const Key& k, Field f);
    void set_key_grad(const Key& k, Field f, const Mat& all_keys);
    // layer_exec.cpp
    void layer_forward(LayerOp op, const OpTag& tag, Phase phase, const sim::Op& o);
    void layer_backward(LayerOp op, bool wgrad, const OpTag& tag);
    void drop_unkept(const Key& key);
    void finish_layer_backward(const Key& key);
    void require_weight_grads_done() const;
    bool weight_grads_done(const Key& key, std::string* missing) const;  // before the optimizer: no layer left half back-propagated
    // edge_exec.cpp
    void embedding(Phase phase, const OpTag& tag);
    void embedding_dropout(Phase phase, const OpTag& tag);
    void head(const OpCode& code, const OpTag& tag);
    void finish_xent(Cache& c);
    // atp_exec.cpp: the layer kernels whose split differs under ATP (false: the shared kernel)
    bool atp() const { return ctx_.atp_column_axis >= 0; }
    bool summa() const { return ctx_.summa; }
    bool cube() const { return ctx_.cube; }
    bool mesh() const { return atp() || summa() || cube(); }
    // 2d / 3d: the block of the [M, h] activation tensor index `tp` holds at the model's ends
    // (row block, row blocks, hidden block, hidden blocks).
    std::array<int, 4> edge_block(int tp) const;
    // cube_exec.cpp
    bool cube_forward(LayerOp op, const Key& key);
    bool cube_backward(LayerOp op, bool wgrad, const Key& key);
    bool cube_collective(std::uint32_t index, const sim::Op& op, std::uint32_t producer);
    void sync_partial_grads(const sim::Op& op);  // data_exec.cpp
    void sync_tied_embedding(const sim::Op& op);  // data_exec.cpp
    // The output layer's weight: the last stage's copy of the tied word embedding, or (one stage
    // holding both ends) the embedding itself, as Megatron shares the parameter when p == 1.
    const Mat& output_weight() const { return out_.weights.wout.size() > 0 ? out_.weights.wout : out_.weights.wemb; }
    Mat& output_grad() { return out_.weights.wout.size() > 0 ? out_.grads.wout : out_.grads.wemb; }
    void final_norm_statistics(const sim::Op& op, const OpTag& tag, Phase phase);  // edge_exec.cpp
    int head_div() const { return mesh() ? atp_.cols : t(); }
    bool atp_forward(LayerOp op, const Key& key, Phase phase);
    bool atp_backward(LayerOp op, bool wgrad, const Key& key);
    void atp_after_collective(Field dst, const Key& key, Phase phase);
    void atp_before_collective(Field src, const Key& key);
    // ATP's token split of the attention core / the MLP activation over the hidden axis.
    bool atp_splits_attention() const;
    bool atp_splits_mlp() const;
    Mat hidden_block(Mat m) const;
    Mat hidden_gather(const Mat& m, const std::string& what);
    void atp_edge_gather(const sim::Op& op, const OpTag& tag, Phase phase);
    // atp_chunk_exec.cpp: ATP's chunks. A chunk's ops use the cache of key (micro, layer, chunk),
    // the whole micro-batch's ops (LayerNorms, weight gradients) that of (micro, layer, kWhole).
    static constexpr int kWhole = -1;
    bool chunked() const { return chunks_ > 1; }
    Key whole_key(const Key& k) const { return chunked() ? Key{std::get<0>(k), std::get<1>(k), kWhole} : k; }
    Mat chunk_rows(const Key& k, Field f);                      // the chunk's rows of a whole tensor
    Mat chunks_stacked(const Key& k, Field f);                  // a tensor of every chunk, rows stacked
    bool put_rows(const Key& k, Field f, Mat part, Phase phase);  // true once every chunk gave its rows
    void erase_layer(const Key& k);                             // the caches of every chunk and the whole
    // summa_exec.cpp: 2d's SUMMA linears, and the [M/q, h/q] blocks at the model's ends
    bool summa_forward(LayerOp op, const Key& key, Phase phase);
    bool summa_later_step(LayerOp op, const Key& key) const;  // the forward GEMM of step > 0 (keeps nothing new)
    bool summa_backward(LayerOp op, bool wgrad, const Key& key);
    void summa_broadcast(std::uint32_t index, const sim::Op& op);
    void summa_reduce(const sim::Op& op, std::uint32_t producer);
    Mat mesh_block(const Mat& full) const;
    Mat mesh_blocks_collective(sim::OpKind kind, std::uint16_t slot, const Mat& in, const std::string& key);
    std::size_t member_in(std::uint16_t slot) const;
    // context_exec.cpp: context parallelism's attention core and collectives
    bool context() const { return ctx_.context > 1; }
    int local_seq() const { return ctx_.dims.seq / ctx_.context; }
    std::vector<int> all_positions() const;  // each sequence's positions in context-rank order
    BlockShape context_kernel_shape() const;
    double attention_scale() const;  // 1/sqrt(head_dim)
    void context_kernel(const OpCode& code, const OpTag& tag, const sim::Op& op);
    void context_attention(Phase phase, const Key& key);  // the one kernel of all-gather / all-to-all
    void context_attention_backward(const Key& key);
    void context_comm(const OpCode& code, const OpTag& tag, const sim::Op& op);
    std::vector<Mat> context_exchange(const sim::Op& op, const Mat& in, const std::string& what);
    Mat ring_block(const Key& key, Phase phase, int step, bool take);
    void ring_exchange(const sim::Op& op, const Key& key, Phase phase);
    void dkv_exchange(const sim::Op& op, const Key& key);
    // moe_exec.cpp: the mixture-of-experts MLP
    bool has_experts(int block) const { return block >= 0 && ctx_.dims.moe_layer(block); }
    ExpertSlice expert_slice(const LayerParams& w) const;
    void moe_forward(MoeOp op, const OpTag& tag, Phase phase, const sim::Op& o);
    void moe_backward(MoeOp op, bool wgrad, const OpTag& tag);
    void moe_exchange(const OpCode& code, const OpTag& tag, const sim::Op& op);
    Mat moe_output(Cache& c, const LayerParams& w);  // bias-dropout-add's input: routed + shared experts
    Mat moe_input_grad(Cache& c, const LayerParams& w);  // LayerNorm 2's output gradient
    bool moe_weight_grads_done(const Key& key, std::string* missing) const;
    // comm_exec.cpp
    void tp_collective(std::uint32_t index, const sim::Op& op);
    void xent_reduce(const sim::Op& op, const OpTag& tag);
    void pipeline(const sim::Op& op, const OpCode& code, const OpTag& tag);
    Mat atp_pipeline_gather(const sim::Op& op, const Mat& piece);
    void dp_reduce(const sim::Op& op);
    void optimizer(const sim::Op& op);
    void dp_gather(const sim::Op& op);
    void gather_owned(const sim::Op& op, const std::vector<int>& blocks, Part part = Part::All);
    void reduce_bucket(const sim::Op& op, std::set<int>& pending, std::set<int>& done, Part part);
    void edp_reduce(const sim::Op& op);
    void edp_gather(const sim::Op& op);
    // fsdp_exec.cpp: ZeRO-3
    bool fully_sharded() const;
    bool experts_sharded() const;  // the routed experts too, over the expert-data group
    void shard_weights();
    void fsdp_gather(const sim::Op& op, const OpTag& tag, Phase phase, Part part);
    void require_gathered(int block, const OpTag& tag, Phase phase, Part part = Part::Dense);
    void fsdp_reduce_scatter(const sim::Op& op, const OpTag& tag, Part part);
    void fsdp_replica_reduce(const sim::Op& op, const OpTag& tag, Part part);
    void take_sharded_grads();
    Mat collective(const sim::Op& op, std::uint16_t slot, const Mat& in, const std::string& what);
    std::vector<Buffer> exchange(std::uint16_t slot, const std::string& key, Buffer data, std::size_t* member);
    std::vector<Mat> exchange_mats(std::uint16_t slot, const std::string& key, const Mat& in, std::size_t* member);

    // helpers
    Cache& cache(const Key& k) { return caches_[k]; }
    const Mat& need(Cache& c, Field f) const;
    Mat take(std::map<Pos, Mat>& from, const Pos& k, const char* what);
    void put(Cache& c, const Key& k, Field f, Mat value, Phase phase);
    // The tensor-parallel sum of a partial result: itself when t == 1.
    const Mat& reduced(Cache& c, Field partial, Field sum) const;
    void finish_block(int block);
    std::vector<int> held_blocks() const;
    int region_rows() const;
    int tp() const { return tp_; }
    int t() const { return ctx_.layout->tensor; }
    const std::string& label(const sim::Op& op) const { return ctx_.program->labels[op.label]; }

    const RunContext& ctx_;
    std::uint32_t rank_;
    int tp_ = 0, dp_ = 0, stage_ = 0;
    int cp_ = 0;  // index in the context group (the ring's position)
    int k_ = 1;  // sub-batches per layer
    int chunks_ = 1;  // ATP's overlap chunks per layer
    AtpCoord atp_{};
    CubeCoord cube_{};
    std::map<std::pair<Key, int>, Mat> cube_weights_;  // 3d: a linear's weight gathered over the weight group
    std::uint32_t index_ = 0;             // op being executed
    std::vector<std::uint32_t> consumer_;  // per op: the first later op that depends on it
    std::map<std::uint32_t, Mat> comm_out_;  // SUMMA: a broadcast's block / a GEMM's partial, by op index
    std::map<std::uint32_t, int> step_of_;   // SUMMA: step of a backward GEMM, by op index
    std::map<std::tuple<Key, int, int, int>, int> steps_;  // SUMMA steps issued per (key, kernel, pass, slot)
    const sim::OpList* list_ = nullptr;
    const std::vector<OpTag>* tags_ = nullptr;
    std::string where_;  // the op being executed, for errors
    std::map<Key, Cache> caches_;
    std::map<Pos, Mat> act_, grad_;  // residual stream / its gradient at (micro, layer position)
    // Sub-batch parts of act_ / grad_: cut from a layer's input (in), gathered from its output (out).
    std::map<Key, Mat> act_in_, act_out_, grad_in_, grad_out_;
    // Key and value gradients a later sub-batch's queries sent to an earlier sub-batch's keys.
    std::map<std::pair<Key, Field>, Mat> key_grads_;
    std::map<std::pair<Key, Field>, Mat> shadow_;  // activations dropped after the forward
    std::map<std::pair<Key, Field>, std::map<int, Mat>> staged_;  // ATP: chunks' rows of a whole tensor
    std::map<Key, std::vector<Field>> unkept_;     // per (micro, layer): fields the forward did not keep
    // Per (micro, layer, sub-batch) of the 1d layer program: which ends of its backward have run
    // (finish_layer_backward).
    struct BackwardEnds {
        bool input_grad = false, whole = false;  // LayerNorm-1's backward ran; it completed the block's gradient
        std::set<LayerOp> weight_grads;          // linears whose weight gradient ran
        std::set<MoeOp> moe_weight_grads;        // a mixture-of-experts MLP's GEMMs whose weight gradient ran
    };
    std::map<Key, BackwardEnds> backward_ends_;
    std::map<int, int> backward_count_;            // per block: micro-batches back-propagated
    std::set<int> final_unreduced_, reduced_blocks_;
    std::set<int> expert_unreduced_, expert_reduced_;  // the same for the routed experts' gradients
    std::map<std::uint32_t, std::uint32_t> instances_;  // per group: collectives issued
    Field last_src_ = Field::X, last_dst_ = Field::X;   // last tensor-parallel collective's buffers
    std::uint32_t last_compute_index_ = 0xFFFFFFFFu;
    Pos last_recv_{-1, -1};
    bool last_recv_grad_ = false;
    int xent_reductions_ = 0;
    int grad_syncs_ = 0;  // tp.grad_allreduce ops run (3d: the first two carry the hidden-block bucket)
    // ZeRO-3: per block, the (micro-batch, pass) its weights were last gathered for; the
    // accumulated gradient shards and the reduce-scatters run per block; whether the optimizer's
    // gradients are the shards already.
    // The routed experts' gathers and reduce-scatters have their own (experts_sharded).
    std::map<int, std::pair<int, Phase>> gathered_, experts_gathered_;
    GptParams fsdp_grads_;
    std::map<int, int> fsdp_reductions_, fsdp_expert_reductions_;
    bool sharded_grads_taken_ = false;
    // The reduce-scatters run per block, and the blocks whose gradient is whole, of one part.
    std::map<int, int>& fsdp_reductions_of(Part part) {
        return part == Part::Experts ? fsdp_expert_reductions_ : fsdp_reductions_;
    }
    std::set<int>& reduced_of(Part part) { return part == Part::Experts ? expert_reduced_ : reduced_blocks_; }
    // Context parallelism: per (key, phase), ring steps and exchanges run; the K/V blocks that
    // arrived for a step (phase, step) and the partial dK/dV that arrived for a backward step.
    std::map<std::tuple<Key, Phase, ContextOp>, int> ring_count_;
    std::map<std::tuple<Key, Phase, int>, Mat> ring_blocks_;
    std::map<std::pair<Key, int>, Mat> ring_dkv_;
    // Mixture of experts, per (micro, layer, sub-batch): how the router sent the rank's token
    // copies and which copies the rank's experts ran.
    struct MoeRoute {
        Routing routing;                 // the rank's tokens' experts (weights: Field::RouteWeights)
        std::vector<int> send_order;     // copy index of each row the permutation sends, by expert
        std::vector<int> experts, origins;  // expert and origin (expert-group member) of each row the experts ran
        std::vector<int> from_etp;       // rows each expert-tensor member contributed to the gather
    };
    std::map<Key, MoeRoute> routes_;
    ExpertCoord expert_{};
    RankOutcome out_;
};

}  // namespace cuboid::cpu
