#include "validate/cpu/blockwise_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cuboid::cpu {
namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

// Scaled scores of one (sequence, head) with the causal mask as -inf.
Mat masked_scores(const Mat& q, const Mat& k, const BlockShape& s, int seq, int h, double scale) {
    const auto nq = static_cast<Eigen::Index>(s.queries.size()), nk = static_cast<Eigen::Index>(s.keys.size());
    Mat sc = q.block(seq * nq, h * s.head_dim, nq, s.head_dim) * k.block(seq * nk, h * s.head_dim, nk, s.head_dim).transpose() * scale;
    for (Eigen::Index i = 0; i < nq; ++i)
        for (Eigen::Index j = 0; j < nk; ++j)
            if (s.keys[static_cast<std::size_t>(j)] > s.queries[static_cast<std::size_t>(i)]) sc(i, j) = kMinusInf;
    return sc;
}

}  // namespace

PartialAttention block_attention(const Mat& q, const Mat& k, const Mat& v, const BlockShape& s, double scale) {
    const auto nq = static_cast<Eigen::Index>(s.queries.size()), nk = static_cast<Eigen::Index>(s.keys.size());
    PartialAttention r{Mat::Zero(s.seqs * nq, s.heads * s.head_dim), Mat::Constant(s.seqs * nq, s.heads, kMinusInf)};
    for (int b = 0; b < s.seqs; ++b)
        for (int h = 0; h < s.heads; ++h) {
            const Mat sc = masked_scores(q, k, s, b, h, scale);
            const Mat vb = v.block(b * nk, h * s.head_dim, nk, s.head_dim);
            for (Eigen::Index i = 0; i < nq; ++i) {
                const double m = sc.row(i).maxCoeff();
                if (m == kMinusInf) continue;  // no key of this block is visible
                const Eigen::RowVectorXd p = (sc.row(i).array() - m).exp().matrix();
                const double l = p.sum();
                r.out.block(b * nq + i, h * s.head_dim, 1, s.head_dim) = p * vb / l;
                r.lse(b * nq + i, h) = m + std::log(l);
            }
        }
    return r;
}

void merge_partial(PartialAttention& acc, const PartialAttention& step, int heads) {
    const Eigen::Index hd = acc.out.cols() / heads;
    for (Eigen::Index r = 0; r < acc.lse.rows(); ++r)
        for (Eigen::Index h = 0; h < heads; ++h) {
            const double a = acc.lse(r, h), b = step.lse(r, h);
            if (b == kMinusInf) continue;
            const double m = std::max(a, b), lse = m + std::log(std::exp(a - m) + std::exp(b - m));
            acc.out.block(r, h * hd, 1, hd) =
                acc.out.block(r, h * hd, 1, hd) * std::exp(a - lse) + step.out.block(r, h * hd, 1, hd) * std::exp(b - lse);
            acc.lse(r, h) = lse;
        }
}

BlockGrads block_attention_backward(const Mat& q, const Mat& k, const Mat& v, const Mat& out, const Mat& dout,
                                    const Mat& lse, const BlockShape& s, double scale) {
    const auto nq = static_cast<Eigen::Index>(s.queries.size()), nk = static_cast<Eigen::Index>(s.keys.size());
    const Eigen::Index hd = s.head_dim;
    BlockGrads g{Mat::Zero(q.rows(), q.cols()), Mat::Zero(k.rows(), k.cols()), Mat::Zero(v.rows(), v.cols())};
    for (int b = 0; b < s.seqs; ++b)
        for (int h = 0; h < s.heads; ++h) {
            Mat p = masked_scores(q, k, s, b, h, scale);
            for (Eigen::Index i = 0; i < nq; ++i) p.row(i) = (p.row(i).array() - lse(b * nq + i, h)).exp().matrix();
            const auto rows = [&](const Mat& m, Eigen::Index n) { return m.block(b * n, h * hd, n, hd); };
            const Mat dO = rows(dout, nq), O = rows(out, nq);
            const Eigen::VectorXd d = dO.cwiseProduct(O).rowwise().sum();  // sum_j P_ij dP_ij over every key
            const Mat dp = dO * rows(v, nk).transpose();
            const Mat ds = (p.array() * (dp.colwise() - d).array()).matrix() * scale;
            g.dq.block(b * nq, h * hd, nq, hd) = ds * rows(k, nk);
            g.dk.block(b * nk, h * hd, nk, hd) = ds.transpose() * rows(q, nq);
            g.dv.block(b * nk, h * hd, nk, hd) = p.transpose() * dO;
        }
    return g;
}

std::vector<int> context_positions(int seq, int c, int i) {
    const int chunk = seq / (2 * c);
    std::vector<int> pos;
    for (int part : {i, 2 * c - 1 - i})
        for (int k = 0; k < chunk; ++k) pos.push_back(part * chunk + k);
    return pos;
}

}  // namespace cuboid::cpu
