#include "validate/cpu/atp_split.hpp"

#include <string>

namespace cuboid::cpu {
namespace {

// How the rows and the columns of a parameter split: over the column axis, the hidden axis, or not.
enum class By : std::uint8_t { None, Col, Hid };
struct Blocks {
    By rows = By::None, cols = By::None;
    bool qkv = false;  // columns are Q, K and V side by side: split each (whole heads)
};

Blocks blocks_of(const std::string& name, bool summa) {
    if (summa) {
        if (name == "wqkv") return {By::Hid, By::Col, true};
        if (name == "bqkv") return {By::None, By::Col, true};
        if (name[0] == 'w') return {By::Hid, By::Col};
        return {By::None, By::Col};
    }
    if (name == "wqkv") return {By::Hid, By::Col, true};
    if (name == "bqkv") return {By::None, By::Col, true};
    if (name == "w1") return {By::Hid, By::Col};
    if (name == "b1") return {By::None, By::Col};
    if (name == "wproj" || name == "w2") return {By::Col, By::Hid};
    return {By::None, By::Hid};  // LayerNorm scales and shifts, bproj, b2: the hidden block
}

int part(By by, const AtpCoord& m) { return by == By::Col ? m.col : (by == By::Hid ? m.hid : 0); }
int parts(By by, const AtpCoord& m) { return by == By::Col ? m.cols : (by == By::Hid ? m.hids : 1); }

}  // namespace

Mat atp_shard(const ParamRef& ref, const Mat& full, const GptDims& d, const AtpCoord& m) {
    if (full.size() == 0 || ref.block < 0) return full;
    const Blocks b = blocks_of(ref.name, m.summa);
    const Mat rows = full.middleRows(full.rows() / parts(b.rows, m) * part(b.rows, m), full.rows() / parts(b.rows, m));
    return b.qkv ? shard_of(rows, Split::QkvColumns, d, m.col, m.cols)
                 : Mat(rows.middleCols(rows.cols() / parts(b.cols, m) * part(b.cols, m), rows.cols() / parts(b.cols, m)));
}

void atp_place(const ParamRef& ref, Mat& full, const Mat& shard, const GptDims& d, const AtpCoord& m) {
    const Blocks b = blocks_of(ref.name, m.summa);
    const Eigen::Index r0 = full.rows() / parts(b.rows, m) * part(b.rows, m), rn = full.rows() / parts(b.rows, m);
    if (b.qkv) {
        Mat rows = full.middleRows(r0, rn);
        place_shard(rows, shard, Split::QkvColumns, d, m.col, m.cols);
        full.middleRows(r0, rn) = rows;
        return;
    }
    const Eigen::Index c0 = full.cols() / parts(b.cols, m) * part(b.cols, m), cn = full.cols() / parts(b.cols, m);
    full.block(r0, c0, rn, cn) = shard;
}

}  // namespace cuboid::cpu

namespace cuboid::cpu {
namespace {

struct CubeBlocks {
    int row = 0, rows = 1, col = 0, cols = 1;
    bool qkv = false;
};

CubeBlocks cube_blocks(const std::string& name, const CubeCoord& m) {
    const int q = m.q;
    if (name == "wqkv") return {m.a2 * q + m.a1, q * q, m.a0, q, true};
    if (name == "w1") return {m.a2 * q + m.a1, q * q, m.a0, q};
    if (name == "wproj" || name == "w2") return {m.a0 * q + m.a1, q * q, m.a2, q};
    if (name == "bqkv") return {0, 1, m.a0, q, true};
    if (name == "b1") return {0, 1, m.a0, q};
    return {0, 1, m.a2, q};  // LayerNorms, bproj, b2
}

}  // namespace

Mat cube_shard(const ParamRef& ref, const Mat& full, const GptDims& d, const CubeCoord& m) {
    if (full.size() == 0 || ref.block < 0) return full;
    const CubeBlocks b = cube_blocks(ref.name, m);
    const Mat rows = full.middleRows(full.rows() / b.rows * b.row, full.rows() / b.rows);
    return b.qkv ? shard_of(rows, Split::QkvColumns, d, b.col, b.cols)
                 : Mat(rows.middleCols(rows.cols() / b.cols * b.col, rows.cols() / b.cols));
}

void cube_place(const ParamRef& ref, Mat& full, const Mat& shard, const GptDims& d, const CubeCoord& m) {
    const CubeBlocks b = cube_blocks(ref.name, m);
    const Eigen::Index r0 = full.rows() / b.rows * b.row, rn = full.rows() / b.rows;
    if (b.qkv) {
        Mat rows = full.middleRows(r0, rn);
        place_shard(rows, shard, Split::QkvColumns, d, b.col, b.cols);
        full.middleRows(r0, rn) = rows;
        return;
    }
    const Eigen::Index c0 = full.cols() / b.cols * b.col, cn = full.cols() / b.cols;
    full.block(r0, c0, rn, cn) = shard;
}

}  // namespace cuboid::cpu
