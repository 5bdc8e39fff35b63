// Data parallelism and the optimizer step on one rank.
//
// A gradient reduction covers every block (layer, embedding, head) whose last micro-batch has
// been back-propagated since the previous reduction: the builder issues a bucket right after the
// backward that completes it. A reduction issued too early misses its block, which the optimizer
// then reports as never reduced. ZeRO's reduce-scatter leaves each replica the sum of its
// contiguous 1/d of the flattened bucket (the rest is NaN, so using it shows); the step updates
// that shard and the all-gather hands every replica the others' updated shards.
//
// The step is plain SGD (w -= lr * g): the check needs an update it can predict, and Adam's
// arithmetic would add nothing to whether the strategy moved the right data.
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "strategies/group_slots.hpp"
#include "validate/cpu/param_buckets.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

bool first_linear_bias(const ParamRef& r) { return std::string(r.name) == "bqkv" || std::string(r.name) == "b1"; }

// Whether the gradient of `r` is a partial sum over the device's token rows, completed by a
// tp.grad_allreduce (strategies/tensor_modes/partial_grads.hpp). 3d carries two buckets: the
// hidden-block parameters (LayerNorms, projection and FC2 biases; `column` false) and the QKV and
// FC1 biases (`column` true).
bool partial_over_rows(const ParamRef& r, bool summa, bool cube, bool column) {
    const std::string name = r.name;
    const bool final_norm = name == "lnf_g" || name == "lnf_b";
    if (!summa && !cube) return r.split == Split::Replicated && name != "wpos";  // 1d + sequence parallelism
    if (cube && column) return r.block >= 0 && first_linear_bias(r);
    const bool layer_vector = r.block >= 0 && name[0] != 'w' && (summa || !first_linear_bias(r));
    return layer_vector || final_norm;
}

}  // namespace

// Sums the gradients the op carries over its group: under 3d the first two ops of the iteration
// carry the hidden-block bucket (axes 0, 1), the next two the column-block bucket (axes 1, 2).
void RankRunner::sync_partial_grads(const sim::Op& op) {
    const bool column = cube() && grad_syncs_++ >= 2;
    std::vector<double> mine;
    std::vector<Mat*> mats;
    each_param(out_.grads, out_.blocks, [&](const ParamRef& r, Mat& m) {
        if (!partial_over_rows(r, summa(), cube(), column)) return;
        mine.insert(mine.end(), m.data(), m.data() + m.size());
        mats.push_back(&m);
    });
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op), mine, &member);
    std::size_t at = 0;
    for (Mat* m : mats)
        for (Eigen::Index i = 0; i < m->size(); ++i, ++at) {
            double sum = 0.0;
            for (const Buffer& p : parts) {
                if (p.size() != mine.size()) throw std::runtime_error("members reduce different partial gradients");
                sum += p[at];
            }
            m->data()[i] = sum;
        }
}

// The tied word embedding's gradient summed between the first stage (wemb) and the last (its copy
// wout): both [V/t, h] of the same vocabulary rows, so the sum is elementwise. Under ZeRO the
// elements a replica does not own are NaN on both sides and stay unused.
void RankRunner::sync_tied_embedding(const sim::Op& op) {
    const Layout& l = *ctx_.layout;
    if (!l.ends_apart() || (stage_ != 0 && stage_ != l.head_stage()))
        throw std::runtime_error("embedding all-reduce outside the first and last stage");
    Mat& g = stage_ == 0 ? out_.grads.wemb : out_.grads.wout;
    const Mat total = collective(op, op.group_slot, g, "tied embedding gradient");
    if (total.rows() != g.rows() || total.cols() != g.cols()) throw std::runtime_error("stages sum different embedding shards");
    g = total;
}

void RankRunner::dp_reduce(const sim::Op& op) { reduce_bucket(op, final_unreduced_, reduced_blocks_, Part::Dense); }

// The routed experts' gradients of the blocks completed since the last such reduction, over the
// expert-data group (the ranks holding the same experts' parts).
void RankRunner::edp_reduce(const sim::Op& op) { reduce_bucket(op, expert_unreduced_, expert_reduced_, Part::Experts); }

void RankRunner::reduce_bucket(const sim::Op& op, std::set<int>& pending, std::set<int>& done, Part part) {
    const std::vector<int> blocks(pending.begin(), pending.end());
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op), flatten(out_.grads, blocks, part), &member);
    std::vector<double> sum = elementwise_sum(parts, "replicas reduce different gradient buckets");
    if (op.kind == sim::OpKind::ReduceScatter) {
        const std::vector<double> owned = owned_elements(out_.grads, blocks, member, parts.size(), part);
        for (std::size_t i = 0; i < sum.size(); ++i)
            if (owned[i] < 0.5) sum[i] = std::numeric_limits<double>::quiet_NaN();
        unflatten(out_.owned, blocks, owned, part);
    } else if (op.kind != sim::OpKind::AllReduce) {
        throw std::runtime_error("gradient reduction must be an all-reduce or a reduce-scatter");
    }
    unflatten(out_.grads, blocks, sum, part);
    done.insert(blocks.begin(), blocks.end());
    pending.clear();
}

void RankRunner::optimizer(const sim::Op&) {
    const Layout& l = *ctx_.layout;
    if (!key_grads_.empty()) throw std::runtime_error("key or value gradients of a sub-batch never reached its keys");
    require_weight_grads_done();
    for (int b : out_.blocks) {
        if (backward_count_[b] != l.micro_batches)
            throw std::runtime_error("block " + std::to_string(b) + " back-propagated " + std::to_string(backward_count_[b]) +
                                     " of " + std::to_string(l.micro_batches) + " micro-batches");
        if (l.data > 1 && reduced_blocks_.count(b) == 0)
            throw std::runtime_error("gradient of block " + std::to_string(b) + " never reduced over the data-parallel group");
        if (l.expert_data() > 1 && has_experts(b) && expert_reduced_.count(b) == 0)
            throw std::runtime_error("expert gradients of block " + std::to_string(b) +
                                     " never reduced over the expert-data group");
    }
    const std::vector<Mat*> w = matrices(out_.weights, out_.blocks), g = matrices(out_.grads, out_.blocks),
                            own = matrices(out_.owned, out_.blocks);
    for (std::size_t i = 0; i < w.size(); ++i)
        *w[i] = (own[i]->array() > 0.5).select(*w[i] - ctx_.learning_rate * *g[i], *w[i]);
}

void RankRunner::dp_gather(const sim::Op& op) { gather_owned(op, out_.blocks, Part::Dense); }
void RankRunner::edp_gather(const sim::Op& op) { gather_owned(op, out_.blocks, Part::Experts); }

// Every member contributes the elements it owns; each element must have exactly one owner.
void RankRunner::gather_owned(const sim::Op& op, const std::vector<int>& blocks, Part part) {
    std::vector<double> mine = flatten(out_.weights, blocks, part);
    const std::size_t n = mine.size();
    const std::vector<double> owned = flatten(out_.owned, blocks, part);
    mine.insert(mine.end(), owned.begin(), owned.end());
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op), mine, &member);
    std::vector<double> gathered(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        int owners = 0;
        for (const Buffer& p : parts) {
            if (p.size() != 2 * n) throw std::runtime_error("replicas gather different parameters");
            if (p[n + i] > 0.5) {
                gathered[i] = p[i];
                ++owners;
            }
        }
        if (owners != 1) throw std::runtime_error("parameter element with " + std::to_string(owners) + " owners in the gather");
    }
    unflatten(out_.weights, blocks, gathered, part);
}

}  // namespace cuboid::cpu
