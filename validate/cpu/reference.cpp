#include "validate/cpu/reference.hpp"

#include <cmath>

#include "validate/cpu/kernels.hpp"
#include "validate/cpu/moe_math.hpp"

namespace cuboid::cpu {
namespace {

// A mixture-of-experts MLP's forward: the routing, every token copy's expert input (row
// token * top_k + j), FC1 output and activation, its output, and the shared experts' a1 / g1.
struct MoeActs {
    Routing routing;
    Mat x, a, g, y, shared_a1, shared_g1;
};

struct LayerActs {
    Mat x, ln1, q, k, v, probs, ctx, h1, ln2, a1, g1;
    MoeActs moe;
};

ExpertSlice all_experts(const GptDims& d, const LayerParams& w) {
    return {&w.ew1, &w.eb1, &w.ew2, &w.eb2, 0, d.experts, d.expert_ffn, true};
}

Mat moe_forward(const GptDims& d, const LayerParams& w, const Mat& ln2, MoeActs& m) {
    m.routing = route(ln2 * w.wr, d.top_k);
    const int k = d.top_k;
    m.x = Mat(ln2.rows() * k, ln2.cols());
    for (Eigen::Index c = 0; c < m.x.rows(); ++c) m.x.row(c) = ln2.row(c / k);
    const ExpertSlice s = all_experts(d, w);
    m.a = expert_fc1(m.x, m.routing.expert, s);
    m.g = gelu(m.a);
    m.y = expert_fc2(m.g, m.routing.expert, s);
    Mat out = Mat::Zero(ln2.rows(), ln2.cols());
    for (Eigen::Index c = 0; c < m.y.rows(); ++c) out.row(c / k) += m.routing.weight(c / k, c % k) * m.y.row(c);
    if (!w.shared) return out;
    m.shared_a1 = add_bias(ln2 * w.sw1, w.sb1);
    m.shared_g1 = gelu(m.shared_a1);
    return out + add_bias(m.shared_g1 * w.sw2, w.sb2);
}

// Gradients of the router, the experts and the shared experts from the output gradient `dout`;
// returns the gradient of the MLP's input (LayerNorm 2's output).
Mat moe_backward(const GptDims& d, const LayerParams& w, const Mat& ln2, const MoeActs& m, const Mat& dout, LayerParams& g) {
    const int k = d.top_k;
    Mat dln2 = Mat::Zero(ln2.rows(), ln2.cols());
    if (w.shared) {
        g.sb2 = column_sums(dout);
        g.sw2 = m.shared_g1.transpose() * dout;
        const Mat da = gelu_backward(m.shared_a1, dout * w.sw2.transpose());
        g.sw1 = ln2.transpose() * da;
        g.sb1 = column_sums(da);
        dln2 = da * w.sw1.transpose();
    }
    Mat dy(m.y.rows(), m.y.cols()), dweight(ln2.rows(), k);
    for (Eigen::Index c = 0; c < m.y.rows(); ++c) {
        dy.row(c) = m.routing.weight(c / k, c % k) * dout.row(c / k);
        dweight(c / k, c % k) = dout.row(c / k).dot(m.y.row(c));
    }
    const ExpertSlice s = all_experts(d, w);
    expert_fc2_wgrad(m.g, dy, m.routing.expert, s, g.ew2, g.eb2);
    const Mat da = gelu_backward(m.a, expert_fc2_dgrad(dy, m.routing.expert, s));
    expert_fc1_wgrad(m.x, da, m.routing.expert, s, g.ew1, g.eb1);
    const Mat dx = expert_fc1_dgrad(da, m.routing.expert, s);
    for (Eigen::Index c = 0; c < dx.rows(); ++c) dln2.row(c / k) += dx.row(c);
    const Mat dlogits = route_backward(m.routing, dweight, d.experts);
    g.wr = ln2.transpose() * dlogits;
    return dln2 + dlogits * w.wr.transpose();
}

struct Forward {
    Mat embedded;
    std::vector<LayerActs> layers;
    Mat final_in, lnf, probs;  // probs: softmax of the logits
    double loss = 0.0;
};

Forward forward(const GptDims& d, const GptParams& p, const Batch& batch) {
    const int seqs = static_cast<int>(batch.tokens.size()), tokens = seqs * d.seq, h = d.hidden;
    const AttnShape a{seqs, d.seq, d.heads, d.head_dim()};
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim()));
    Forward f;
    Mat x(tokens, h);
    for (int r = 0; r < tokens; ++r)
        x.row(r) = p.wemb.row(batch.tokens[r / d.seq][r % d.seq]) + p.wpos.row(r % d.seq);
    f.embedded = x;
    for (const LayerParams& w : p.layers) {
        LayerActs l;
        l.x = x;
        l.ln1 = layer_norm(x, w.ln1_g, w.ln1_b);
        const Mat qkv = add_bias(l.ln1 * w.wqkv, w.bqkv);
        l.q = qkv.middleCols(0, h);
        l.k = qkv.middleCols(h, h);
        l.v = qkv.middleCols(2 * h, h);
        l.probs = causal_softmax(attn_scores(l.q, l.k, a), scale);
        l.ctx = attn_context(l.probs, l.v, a);
        l.h1 = x + add_bias(l.ctx * w.wproj, w.bproj);
        l.ln2 = layer_norm(l.h1, w.ln2_g, w.ln2_b);
        if (w.moe) {
            x = l.h1 + moe_forward(d, w, l.ln2, l.moe);
        } else {
            l.a1 = add_bias(l.ln2 * w.w1, w.b1);
            l.g1 = gelu(l.a1);
            x = l.h1 + add_bias(l.g1 * w.w2, w.b2);
        }
        f.layers.push_back(std::move(l));
    }
    f.final_in = x;
    f.lnf = layer_norm(x, p.lnf_g, p.lnf_b);
    const Mat logits = f.lnf * p.wemb.transpose();  // tied output layer
    f.probs = Mat(logits.rows(), logits.cols());
    for (int r = 0; r < tokens; ++r) {
        const double mx = logits.row(r).maxCoeff();
        const Eigen::RowVectorXd e = (logits.row(r).array() - mx).exp();
        const double sum = e.sum();
        f.probs.row(r) = e / sum;
        f.loss += std::log(sum) + mx - logits(r, batch.targets[r / d.seq][r % d.seq]);
    }
    f.loss /= tokens;
    return f;
}

}  // namespace

double reference_loss(const GptDims& d, const GptParams& params, const Batch& batch) {
    return forward(d, params, batch).loss;
}

Reference reference_step(const GptDims& d, const GptParams& p, const Batch& batch) {
    const Forward f = forward(d, p, batch);
    const int seqs = static_cast<int>(batch.tokens.size()), tokens = seqs * d.seq, h = d.hidden;
    const AttnShape a{seqs, d.seq, d.heads, d.head_dim()};
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim()));
    Reference out{f.loss, zeros_like(p)};
    GptParams& g = out.grads;
    Mat dlogits = f.probs;
    for (int r = 0; r < tokens; ++r) dlogits(r, batch.targets[r / d.seq][r % d.seq]) -= 1.0;
    dlogits /= tokens;
    g.wemb = dlogits.transpose() * f.lnf;  // the output layer's share of the tied gradient
    LnGrads lnf = layer_norm_backward(f.final_in, p.lnf_g, dlogits * p.wemb);
    g.lnf_g = lnf.dg;
    g.lnf_b = lnf.db;
    Mat dx = lnf.dx;
    for (int i = d.layers - 1; i >= 0; --i) {
        const LayerParams& w = p.layers[static_cast<std::size_t>(i)];
        const LayerActs& l = f.layers[static_cast<std::size_t>(i)];
        LayerParams& gw = g.layers[static_cast<std::size_t>(i)];
        Mat dln2_out;
        if (w.moe) {
            dln2_out = moe_backward(d, w, l.ln2, l.moe, dx, gw);
        } else {
            gw.b2 = column_sums(dx);
            gw.w2 = l.g1.transpose() * dx;
            const Mat da1 = gelu_backward(l.a1, dx * w.w2.transpose());
            gw.w1 = l.ln2.transpose() * da1;
            gw.b1 = column_sums(da1);
            dln2_out = da1 * w.w1.transpose();
        }
        const LnGrads ln2 = layer_norm_backward(l.h1, w.ln2_g, dln2_out);
        gw.ln2_g = ln2.dg;
        gw.ln2_b = ln2.db;
        const Mat dh1 = dx + ln2.dx;
        gw.bproj = column_sums(dh1);
        gw.wproj = l.ctx.transpose() * dh1;
        const Mat dctx = dh1 * w.wproj.transpose();
        const Mat ds = causal_softmax_backward(l.probs, attn_dprobs(dctx, l.v, a), scale);
        Mat dqkv(tokens, 3 * h);
        dqkv << attn_dq(ds, l.k, a), attn_dk(ds, l.q, a), attn_dv(l.probs, dctx, a);
        gw.wqkv = l.ln1.transpose() * dqkv;
        gw.bqkv = column_sums(dqkv);
        const LnGrads ln1 = layer_norm_backward(l.x, w.ln1_g, dqkv * w.wqkv.transpose());
        gw.ln1_g = ln1.dg;
        gw.ln1_b = ln1.db;
        dx = dh1 + ln1.dx;
    }
    for (int r = 0; r < tokens; ++r) {
        g.wemb.row(batch.tokens[r / d.seq][r % d.seq]) += dx.row(r);
        g.wpos.row(r % d.seq) += dx.row(r);
    }
    g.wout = g.wemb;  // the copy's gradient is the tied total (what the first/last-stage all-reduce gives)
    return out;
}

}  // namespace cuboid::cpu
