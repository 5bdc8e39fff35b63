// A rank numbering as an ordered list of named axes, the first varying fastest:
//     rank = c0 + n0 * (c1 + n1 * (c2 + ...))
// for coordinates c_i < n_i. The parallel plan is one such list (Layout::grid: tensor, context,
// data, pipeline); the expert, sharding and tensor-mesh groups are other lists over the same
// ranks, made by splitting a run of adjacent axes into finer ones (RankGrid::resplit), as
// Megatron-Core carves its expert groups from the tensor x data ranks of a stage.
//
// A group family is "the ranks that differ only along these axes": every communicator of the
// plan but the pipeline's neighbour pairs is one (strategies/group_families.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace cuboid {

// The axis names cuboid's layouts use. Names are compared as strings; these keep them spelled
// one way.
namespace axis {
inline constexpr std::string_view kTensor = "tensor";
inline constexpr std::string_view kContext = "context";
inline constexpr std::string_view kData = "data";  // replicas that take different sequences
inline constexpr std::string_view kPipeline = "pipeline";
inline constexpr std::string_view kExpertTensor = "expert_tensor";
inline constexpr std::string_view kExpert = "expert";
inline constexpr std::string_view kExpertData = "expert_data";
inline constexpr std::string_view kShard = "shard";      // ZeRO-3: ranks one copy of the state is sharded over
inline constexpr std::string_view kReplica = "replica";  // ZeRO-3: the copies
// ZeRO-3 hybrid sharding of the routed experts: the expert-data ranks inside one shard group's
// tensor x shard ranks, and the copies of that group.
inline constexpr std::string_view kExpertShard = "expert_shard";
inline constexpr std::string_view kExpertReplica = "expert_replica";
inline constexpr std::string_view kMesh0 = "mesh0";      // the tensor group's mesh axes (Layout::tensor_mesh)
inline constexpr std::string_view kMesh1 = "mesh1";
inline constexpr std::string_view kMesh2 = "mesh2";
}  // namespace axis

struct GridAxis {
    std::string_view name;
    int size = 1;
};

class RankGrid {
public:
    // Throws std::logic_error on a size below 1 or a name given twice.
    explicit RankGrid(std::vector<GridAxis> axes);

    const std::vector<GridAxis>& axes() const { return axes_; }
    int ranks() const { return ranks_; }
    // Position of the named axis in the list; std::logic_error when the grid has none.
    std::size_t index(std::string_view name) const;
    int size(std::string_view name) const { return axes_[index(name)].size; }

    int coord(std::uint32_t rank, std::size_t axis) const {
        return static_cast<int>(rank) / strides_[axis] % axes_[axis].size;
    }
    // The rank at the given coordinates, one per axis in the grid's order.
    std::uint32_t rank(std::span<const int> coords) const;
    // `rank` with its coordinate along `axis` moved by `by`, modulo the axis' size.
    std::uint32_t shifted(std::uint32_t rank, std::size_t axis, int by) const;

    // The same ranks with the adjacent axes first..last (inclusive, in order) replaced by `parts`,
    // whose sizes multiply to the same number: a finer or coarser view of one block of coordinates.
    RankGrid resplit(std::string_view first, std::string_view last, std::vector<GridAxis> parts) const;

    // Every group of ranks that differ only along the `varying` axes: group g of the result lists
    // its ranks in increasing order (the first varying axis fastest), groups in the order of their
    // first rank; `group_of[r]` is the group holding rank r.
    struct Partition {
        std::vector<std::vector<std::uint32_t>> groups;
        std::vector<std::uint32_t> group_of;
    };
    Partition partition(std::span<const std::string_view> varying) const;

private:
    std::vector<GridAxis> axes_;
    std::vector<int> strides_;
    int ranks_ = 1;
};

}  // namespace cuboid
