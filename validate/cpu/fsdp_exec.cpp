// ZeRO-3 / FSDP on one rank: a rank keeps only its shard of each unit's weights (the other
// elements are NaN, so using one shows); the program's all-gather of a unit fills in the others'
// shards before each forward and each backward of that unit, and every kernel of the unit checks
// that the gather of its own micro-batch and pass came first (FSDP frees the gathered copy after
// the pass, so a pass without its gather would have no weights). After each backward the unit's
// gradient is reduce-scattered over the shard group into the rank's accumulated gradient shard;
// under hybrid sharding the shard is then all-reduced with the copies. The optimizer updates the
// owned elements only and nothing is gathered after it: the next iteration's gathers do.
// A mixture-of-experts layer's routed experts are sharded the same way over the expert-data group
// (the ranks holding the same experts), with gathers and reduce-scatters of their own; the router
// and shared experts belong to the layer's dense part. Under hybrid sharding the experts are
// sharded over the expert-data ranks of one shard group (Layout::expert_shard_size) and their
// gradient shard all-reduced with the copies, as the dense part's is.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "strategies/training_state.hpp"
#include "validate/cpu/param_buckets.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

int block_of_unit(int unit) {
    if (unit == OpTag::kEmbeddingUnit) return kEmbeddingBlock;
    if (unit == OpTag::kHeadUnit) return kHeadBlock;
    if (unit < 0) throw std::runtime_error("parameter-unit op without a unit");
    return unit;
}

std::string block_name(int block) {
    if (block == kEmbeddingBlock) return "the embedding";
    if (block == kHeadBlock) return "the head";
    return "layer " + std::to_string(block);
}

}  // namespace

bool RankRunner::fully_sharded() const { return cuboid::fully_sharded(ctx_.zero_stage, *ctx_.layout); }
bool RankRunner::experts_sharded() const { return cuboid::experts_fully_sharded(ctx_.zero_stage, *ctx_.layout); }

void RankRunner::shard_weights() {
    const bool dense = fully_sharded(), experts = experts_sharded();
    if (!dense && !experts) return;
    const Layout& l = *ctx_.layout;
    fsdp_grads_ = zeros_like(out_.weights);
    // The rank's place in its shard group and in its expert shard group (stage rank
    // q = a + etp * (e + ep * f), strategies/group_slots.hpp; f's first expert_shard_size()
    // values are one shard group's).
    const auto shard_member = static_cast<std::size_t>(dp_ % l.shard_size());
    const auto expert_member =
        static_cast<std::size_t>((tp_ + l.tensor * dp_) / (l.expert_tensor * l.expert) % l.expert_shard_size());
    const auto shard = [&](int b, Part part, std::size_t member, int members) {
        const std::vector<int> one{b};
        const std::vector<double> owned = owned_elements(out_.owned, one, member, static_cast<std::size_t>(members), part);
        unflatten(out_.owned, one, owned, part);
        std::vector<double> w = flatten(out_.weights, one, part);
        for (std::size_t i = 0; i < w.size(); ++i)
            if (owned[i] < 0.5) w[i] = std::numeric_limits<double>::quiet_NaN();
        unflatten(out_.weights, one, w, part);
    };
    for (int b : out_.blocks) {
        if (dense) shard(b, Part::Dense, shard_member, l.shard_size());
        if (experts && has_experts(b)) shard(b, Part::Experts, expert_member, l.expert_shard_size());
    }
}

void RankRunner::fsdp_gather(const sim::Op& op, const OpTag& tag, Phase phase, Part part) {
    const int block = block_of_unit(tag.layer);
    gather_owned(op, {block}, part);
    (part == Part::Experts ? experts_gathered_ : gathered_)[block] = {tag.micro, phase};
}

void RankRunner::require_gathered(int block, const OpTag& tag, Phase phase, Part part) {
    if (!(part == Part::Experts ? experts_sharded() : fully_sharded())) return;
    const Phase pass = phase == Phase::Forward ? Phase::Forward : Phase::Backward;  // recompute: the backward's
    const auto& gathered = part == Part::Experts ? experts_gathered_ : gathered_;
    const auto it = gathered.find(block);
    if (it == gathered.end() || it->second.first != tag.micro || it->second.second != pass)
        throw std::runtime_error(std::string(part == Part::Experts ? "routed experts" : "weights") + " of " +
                                 block_name(block) + " not gathered for this " +
                                 (pass == Phase::Forward ? "forward" : "backward") + " (ZeRO-3 keeps only a shard)");
}

void RankRunner::fsdp_reduce_scatter(const sim::Op& op, const OpTag& tag, Part part) {
    const int block = block_of_unit(tag.layer);
    const std::vector<int> one{block};
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op), flatten(out_.grads, one, part), &member);
    std::vector<double> sum = elementwise_sum(parts, "shards reduce different gradients");
    const std::vector<double> owned = flatten(out_.owned, one, part);
    std::vector<double> acc = flatten(fsdp_grads_, one, part);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = owned[i] > 0.5 ? acc[i] + sum[i] : std::numeric_limits<double>::quiet_NaN();
    unflatten(fsdp_grads_, one, acc, part);
    unflatten(out_.grads, one, std::vector<double>(acc.size(), 0.0), part);  // the next micro-batch starts from zero
    // Under hybrid sharding the shard is whole only after the copies' all-reduce.
    if (++fsdp_reductions_of(part)[block] == ctx_.layout->micro_batches && !ctx_.layout->hybrid_sharding())
        reduced_of(part).insert(block);
}

void RankRunner::fsdp_replica_reduce(const sim::Op& op, const OpTag& tag, Part part) {
    const int block = block_of_unit(tag.layer);
    const int reductions = fsdp_reductions_of(part)[block];
    if (reductions != ctx_.layout->micro_batches)
        throw std::runtime_error(std::string(part == Part::Experts ? "routed experts' gradient" : "gradient") + " of " +
                                 block_name(block) + " reduce-scattered for " + std::to_string(reductions) + " of " +
                                 std::to_string(ctx_.layout->micro_batches) + " micro-batches before the copies' all-reduce");
    const std::vector<int> one{block};
    std::size_t member = 0;
    const auto parts = exchange(op.group_slot, label(op), flatten(fsdp_grads_, one, part), &member);
    std::vector<double> sum = elementwise_sum(parts, "copies reduce different gradient shards");
    unflatten(fsdp_grads_, one, sum, part);
    reduced_of(part).insert(block);
}

void RankRunner::take_sharded_grads() {
    const bool dense = fully_sharded(), experts = experts_sharded();
    if ((!dense && !experts) || sharded_grads_taken_) return;
    const int m = ctx_.layout->micro_batches;
    for (int b : out_.blocks) {
        if (dense && reduced_blocks_.count(b) == 0)
            throw std::runtime_error("gradient of " + block_name(b) + " reduce-scattered for " +
                                     std::to_string(fsdp_reductions_[b]) + " of " + std::to_string(m) + " micro-batches" +
                                     (ctx_.layout->hybrid_sharding() ? " or never all-reduced between the copies" : ""));
        if (experts && has_experts(b) && expert_reduced_.count(b) == 0)
            throw std::runtime_error("routed experts' gradient of " + block_name(b) + " reduce-scattered for " +
                                     std::to_string(fsdp_expert_reductions_[b]) + " of " + std::to_string(m) +
                                     " micro-batches" +
                                     (ctx_.layout->hybrid_sharding() ? " or never all-reduced between the copies" : ""));
    }
    // The optimizer reads the accumulated shards of the sharded parts (an unsharded part keeps
    // the gradient its own reductions left).
    for (const Part part : {Part::Dense, Part::Experts})
        if (part == Part::Dense ? dense : experts)
            unflatten(out_.grads, out_.blocks, flatten(fsdp_grads_, out_.blocks, part), part);
    sharded_grads_taken_ = true;
}

}  // namespace cuboid::cpu
