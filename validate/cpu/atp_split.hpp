// ATP's split of a transformer layer's parameters over its dc x dr device mesh (Cheng et al. 2023,
// strategies/tensor_modes/mode_shapes.hpp): device (i, j), i on the column axis, j on the hidden
// axis, holds the first linears' block W[j, i] (rows: hidden block j, columns: heads / MLP block i)
// and the second linears' block W[i, j]; the LayerNorms and the second linears' biases hold the
// hidden block j, the first linears' biases the block i. The embedding and the head keep
// Megatron's vocabulary-parallel split over the whole tensor group (tiny_gpt.hpp).
//
// 2d (Optimus / SUMMA, strategies/tensor_modes/mode_linear.cpp) uses the same blocks with `summa`
// set: device (i, j) of the q x q mesh holds every linear's W[i, j] (rows block i, columns block
// j), and the biases and LayerNorms the column (hidden) block j; `hid` is then the row index i and
// `col` the column index j.
#pragma once

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

struct AtpCoord {
    int col = 0, cols = 1;  // position on / length of the column axis (dc)
    int hid = 0, hids = 1;  // position on / length of the hidden axis (dr)
    bool summa = false;     // 2d: see above
};

// The block of layer parameter `ref` device `m` holds, and the inverse.
Mat atp_shard(const ParamRef& ref, const Mat& full, const GptDims& d, const AtpCoord& m);
void atp_place(const ParamRef& ref, Mat& full, const Mat& shard, const GptDims& d, const AtpCoord& m);

}  // namespace cuboid::cpu

namespace cuboid::cpu {

// 3d (Bian et al. 2021, ColossalAI's Linear3D; strategies/tensor_modes/mode_linear.cpp) on the
// q x q x q cube, device (a0, a1, a2): QKV and FC1 hold W[rows: block a2, sub-block a1; columns:
// block a0], the projection and FC2 W[rows: block a0, sub-block a1; columns: block a2] (the
// weight group, axis 1, gathers the sub-blocks); the first linears' biases the column block a0,
// the second linears' biases and the LayerNorms the hidden block a2.
struct CubeCoord {
    int a0 = 0, a1 = 0, a2 = 0, q = 1;
};
Mat cube_shard(const ParamRef& ref, const Mat& full, const GptDims& d, const CubeCoord& m);
void cube_place(const ParamRef& ref, Mat& full, const Mat& shard, const GptDims& d, const CubeCoord& m);

}  // namespace cuboid::cpu
