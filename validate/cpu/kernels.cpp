#include "validate/cpu/kernels.hpp"

#include <cmath>
#include <limits>

namespace cuboid::cpu {

Mat layer_norm(const Mat& x, const Mat& g, const Mat& b) {
    Mat y(x.rows(), x.cols());
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const double mean = x.row(r).mean();
        const Eigen::RowVectorXd c = x.row(r).array() - mean;
        const double rstd = 1.0 / std::sqrt(c.squaredNorm() / static_cast<double>(x.cols()) + kLnEps);
        y.row(r) = (c * rstd).cwiseProduct(g.row(0)) + b.row(0);
    }
    return y;
}

LnGrads layer_norm_backward(const Mat& x, const Mat& g, const Mat& dy) {
    const double n = static_cast<double>(x.cols());
    LnGrads out{Mat(x.rows(), x.cols()), Mat::Zero(1, x.cols()), Mat::Zero(1, x.cols())};
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const double mean = x.row(r).mean();
        const Eigen::RowVectorXd c = x.row(r).array() - mean;
        const double rstd = 1.0 / std::sqrt(c.squaredNorm() / n + kLnEps);
        const Eigen::RowVectorXd xhat = c * rstd;
        out.dg.row(0) += dy.row(r).cwiseProduct(xhat);
        out.db.row(0) += dy.row(r);
        const Eigen::RowVectorXd dxhat = dy.row(r).cwiseProduct(g.row(0));
        // d/dx of (x - mean) * rstd: rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat . xhat)).
        out.dx.row(r) = rstd * (dxhat.array() - dxhat.mean() - xhat.array() * dxhat.dot(xhat) / n).matrix();
    }
    return out;
}

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;
}  // namespace

Mat gelu(const Mat& x) {
    return x.unaryExpr([](double v) {
        return 0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
    });
}

Mat gelu_backward(const Mat& x, const Mat& dy) {
    const Mat d = x.unaryExpr([](double v) {
        const double u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
        const double th = std::tanh(u);
        const double du = kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * v * v);
        return 0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * du;
    });
    return dy.cwiseProduct(d);
}

Mat causal_softmax(const Mat& scores, double scale, int queries) {
    Mat p = Mat::Zero(scores.rows(), scores.cols());
    const Eigen::Index rows = queries > 0 ? queries : scores.cols(), first = scores.cols() - rows;
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        const Eigen::Index q = first + i % rows;  // query position within its sequence
        const Eigen::RowVectorXd row = scores.row(i).head(q + 1) * scale;
        const double mx = row.maxCoeff();
        const Eigen::RowVectorXd e = (row.array() - mx).exp();
        p.row(i).head(q + 1) = e / e.sum();
    }
    return p;
}

Mat causal_softmax_backward(const Mat& probs, const Mat& dprobs, double scale) {
    Mat ds(probs.rows(), probs.cols());
    for (Eigen::Index i = 0; i < probs.rows(); ++i) {
        const double dot = probs.row(i).dot(dprobs.row(i));
        ds.row(i) = scale * probs.row(i).cwiseProduct((dprobs.row(i).array() - dot).matrix());
    }
    return ds;
}

namespace {
// The [s, hd] block of head hh of sequence q in a [tokens, heads*hd] matrix.
auto head_block(const Mat& m, const AttnShape& a, int q, int hh) {
    return m.block(q * a.seq, hh * a.head_dim, a.seq, a.head_dim);
}
auto head_block(Mat& m, const AttnShape& a, int q, int hh) {
    return m.block(q * a.seq, hh * a.head_dim, a.seq, a.head_dim);
}
// The same for keys and values (and their gradients): key_rows() rows per sequence.
auto key_block(const Mat& m, const AttnShape& a, int q, int hh) {
    return m.block(q * a.key_rows(), hh * a.head_dim, a.key_rows(), a.head_dim);
}
auto key_block(Mat& m, const AttnShape& a, int q, int hh) {
    return m.block(q * a.key_rows(), hh * a.head_dim, a.key_rows(), a.head_dim);
}
auto score_block(const Mat& m, const AttnShape& a, int q, int hh) {
    return m.middleRows((q * a.heads + hh) * a.seq, a.seq);
}
auto score_block(Mat& m, const AttnShape& a, int q, int hh) {
    return m.middleRows((q * a.heads + hh) * a.seq, a.seq);
}
template <class F>
void each_head(const AttnShape& a, F&& f) {
    for (int q = 0; q < a.seqs; ++q)
        for (int hh = 0; hh < a.heads; ++hh) f(q, hh);
}
}  // namespace

Mat attn_scores(const Mat& q, const Mat& k, const AttnShape& a) {
    Mat s(a.seqs * a.heads * a.seq, a.key_rows());
    each_head(a, [&](int b, int hh) {
        score_block(s, a, b, hh) = head_block(q, a, b, hh) * key_block(k, a, b, hh).transpose();
    });
    return s;
}

Mat attn_context(const Mat& probs, const Mat& v, const AttnShape& a) {
    Mat c(a.seqs * a.seq, a.heads * a.head_dim);
    each_head(a, [&](int b, int hh) { head_block(c, a, b, hh) = score_block(probs, a, b, hh) * key_block(v, a, b, hh); });
    return c;
}

Mat attn_dprobs(const Mat& dctx, const Mat& v, const AttnShape& a) {
    Mat d(a.seqs * a.heads * a.seq, a.key_rows());
    each_head(a, [&](int b, int hh) {
        score_block(d, a, b, hh) = head_block(dctx, a, b, hh) * key_block(v, a, b, hh).transpose();
    });
    return d;
}

Mat attn_dv(const Mat& probs, const Mat& dctx, const AttnShape& a) {
    Mat d(a.seqs * a.key_rows(), a.heads * a.head_dim);
    each_head(a, [&](int b, int hh) {
        key_block(d, a, b, hh) = score_block(probs, a, b, hh).transpose() * head_block(dctx, a, b, hh);
    });
    return d;
}

Mat attn_dq(const Mat& dscores, const Mat& k, const AttnShape& a) {
    Mat d(a.seqs * a.seq, a.heads * a.head_dim);
    each_head(a, [&](int b, int hh) { head_block(d, a, b, hh) = score_block(dscores, a, b, hh) * key_block(k, a, b, hh); });
    return d;
}

Mat attn_dk(const Mat& dscores, const Mat& q, const AttnShape& a) {
    Mat d(a.seqs * a.key_rows(), a.heads * a.head_dim);
    each_head(a, [&](int b, int hh) {
        key_block(d, a, b, hh) = score_block(dscores, a, b, hh).transpose() * head_block(q, a, b, hh);
    });
    return d;
}

Mat add_bias(const Mat& x, const Mat& bias) { return x.rowwise() + bias.row(0); }

Mat column_sums(const Mat& x) { return x.colwise().sum(); }

Mat row_block(const Mat& x, int i, int t) { return x.middleRows(x.rows() / t * i, x.rows() / t); }

Mat stack_rows(const std::vector<Mat>& blocks) {
    Eigen::Index rows = 0;
    for (const Mat& b : blocks) rows += b.rows();
    Mat out(rows, blocks.empty() ? 0 : blocks.front().cols());
    Eigen::Index at = 0;
    for (const Mat& b : blocks) {
        out.middleRows(at, b.rows()) = b;
        at += b.rows();
    }
    return out;
}

// Per row: the sum and the sum of squares of x's columns.
Mat row_sums(const Mat& x) {
    Mat s(x.rows(), 2);
    s.col(0) = x.rowwise().sum();
    s.col(1) = x.array().square().rowwise().sum().matrix();
    return s;
}

// Normalised x (x - mean) / sqrt(var + eps) from the totals over the whole hidden size h.
Mat normalised(const Mat& x, const Mat& totals, int h) {
    const Eigen::ArrayXd mean = totals.col(0).array() / h;
    const Eigen::ArrayXd rstd = (totals.col(1).array() / h - mean.square() + kLnEps).rsqrt();
    return ((x.array().colwise() - mean).colwise() * rstd).matrix();
}

Mat rstd_of(const Mat& totals, int h) {
    const Eigen::ArrayXd mean = totals.col(0).array() / h;
    return (totals.col(1).array() / h - mean.square() + kLnEps).rsqrt().matrix();
}

Mat scale_shift(const Mat& xhat, const Mat& g, const Mat& b) {
    return (xhat.array().rowwise() * g.row(0).array()).matrix().rowwise() + b.row(0);
}

// LayerNorm backward on the block: d(xhat) = dy * g; the row sums of d(xhat) and d(xhat) * xhat.
Mat norm_grad_sums(const Mat& xhat, const Mat& g, const Mat& dy) {
    const Mat dxhat = (dy.array().rowwise() * g.row(0).array()).matrix();
    Mat s(dy.rows(), 2);
    s.col(0) = dxhat.rowwise().sum();
    s.col(1) = dxhat.cwiseProduct(xhat).rowwise().sum();
    return s;
}

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat . xhat)), the means over the whole h.
Mat norm_input_grad(const Mat& xhat, const Mat& g, const Mat& dy, const Mat& rstd, const Mat& totals, int h) {
    const Mat dxhat = (dy.array().rowwise() * g.row(0).array()).matrix();
    const Eigen::ArrayXd m1 = totals.col(0).array() / h, m2 = totals.col(1).array() / h;
    const Eigen::ArrayXXd centred = (dxhat.array().colwise() - m1) - xhat.array().colwise() * m2;
    return (centred.colwise() * rstd.col(0).array()).matrix();
}

}  // namespace cuboid::cpu
