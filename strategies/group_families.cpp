#include "strategies/group_families.hpp"

#include "strategies/group_slots.hpp"

namespace cuboid {

std::vector<GroupFamily> group_families(const Layout& l, bool parameter_gathers, bool expert_gathers) {
    const RankGrid grid = l.grid();
    std::vector<GroupFamily> out;
    const auto add = [&](std::uint16_t slot, const RankGrid& g, std::vector<std::string_view> varying,
                         std::uint32_t Labels::*label) { out.push_back(GroupFamily{slot, g, std::move(varying), label}); };
    add(slot::kTensor, grid, {axis::kTensor}, &Labels::group_tp);
    // Gradients are reduced, and ZeRO shards, over data x context (Megatron-Core's
    // data-and-context group).
    add(slot::kData, grid, {axis::kContext, axis::kData}, &Labels::group_dp);
    // ZeRO-3 hybrid sharding: shard groups of consecutive data indices and, across them, the
    // groups of ranks holding the same shard (HSDP's shard and replicate dimensions). ZeRO-3's
    // parameter gathers run on a stream of their own, so they get their own copy of each shard
    // group: a group carries the ops of one stream only, so that its k-th collective is the same
    // op on every member whatever order the members' streams post in.
    if (parameter_gathers || l.hybrid_sharding()) {
        const RankGrid sharding = l.shard_grid();
        if (parameter_gathers) add(slot::kShardGather, sharding, {axis::kShard}, &Labels::group_shard);
        if (l.hybrid_sharding()) {
            add(slot::kShard, sharding, {axis::kShard}, &Labels::group_shard);
            add(slot::kReplica, sharding, {axis::kReplica}, &Labels::group_replica);
        }
    }
    if (l.context > 1) add(slot::kContext, grid, {axis::kContext}, &Labels::group_cp);
    if (l.experts) {
        const RankGrid experts = l.expert_grid();
        add(slot::kExpert, experts, {axis::kExpert}, &Labels::group_ep);
        add(slot::kExpertTensor, experts, {axis::kExpertTensor}, &Labels::group_etp);
        add(slot::kExpertData, experts, {axis::kExpertData}, &Labels::group_edp);
        // ZeRO-3's gathers of the experts' shards, on the parameter-gather stream: a copy of the
        // expert shard groups of their own, as for the shard groups above. Without hybrid
        // sharding an expert shard group is a whole expert-data group.
        if (expert_gathers || l.hybrid_sharding()) {
            const RankGrid sharding = l.expert_shard_grid();
            if (expert_gathers)
                add(slot::kExpertDataGather, sharding, {axis::kExpertShard},
                    l.hybrid_sharding() ? &Labels::group_expert_shard : &Labels::group_edp);
            if (l.hybrid_sharding()) {
                add(slot::kExpertShard, sharding, {axis::kExpertShard}, &Labels::group_expert_shard);
                add(slot::kExpertReplica, sharding, {axis::kExpertReplica}, &Labels::group_expert_replica);
            }
        }
    }
    // Axis groups only when the layers use them (2d, 3d, atp); else the slots alias the tensor group.
    if (l.multi_axis_mesh()) {
        const RankGrid mesh = l.mesh_grid();
        add(slot::tensor_axis(0), mesh, {axis::kMesh0}, &Labels::group_tp);
        add(slot::tensor_axis(1), mesh, {axis::kMesh1}, &Labels::group_tp);
        add(slot::tensor_axis(2), mesh, {axis::kMesh2}, &Labels::group_tp);
    }
    return out;
}

}  // namespace cuboid
