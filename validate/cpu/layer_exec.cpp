// The kernels of one transformer layer on one tensor rank (Megatron 1d): QKV and FC1 split by
// columns, projection and FC2 by rows, heads split over t; LayerNorm, bias-dropout-add and the
// residual stream are whole (or the rank's rows under sequence parallelism).
#include <array>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "validate/cpu/kernels.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

// What each forward kernel saves for the backward (Korthikanti et al.'s accounting, as
// strategies/activation_memory.cpp allocates it): when the program's forward allocates nothing
// for a kernel, the tensor is not kept and must be recomputed before the backward uses it.
std::vector<Field> saved_by(LayerOp op) {
    switch (op) {
        case LayerOp::Ln1: return {Field::X};
        case LayerOp::Qkv: return {Field::Ln1};
        case LayerOp::Qk: return {Field::Q, Field::K};
        case LayerOp::Softmax: return {Field::Probs};
        case LayerOp::AttnDropout: return {Field::ProbsD};
        case LayerOp::Av: return {Field::V};
        case LayerOp::Proj: return {Field::Ctx};
        case LayerOp::Ln2: return {Field::H1};
        case LayerOp::Fc1: return {Field::Ln2};
        case LayerOp::Act: return {Field::A1};
        case LayerOp::Fc2: return {Field::G1};
        // The fused kernel keeps Q, K, V and its row statistics; the probabilities stand for
        // those statistics here (the backward rebuilds P from them, as FlashAttention does).
        // Context parallelism keeps the log-sum-exp, and in the all-to-all mode the head-split
        // tensors (context_exec.cpp).
        case LayerOp::Attn:
            return {Field::Q, Field::K, Field::V, Field::Probs, Field::ProbsD, Field::Lse, Field::QH, Field::KH, Field::VH, Field::OH};
        default: return {};
    }
}

Mat concat_columns(const Mat& a, const Mat& b, const Mat& c) {
    Mat out(a.rows(), a.cols() + b.cols() + c.cols());
    out << a, b, c;
    return out;
}

bool linear(LayerOp op) { return op == LayerOp::Qkv || op == LayerOp::Proj || op == LayerOp::Fc1 || op == LayerOp::Fc2; }

constexpr std::array<LayerOp, 4> kLinears = {LayerOp::Fc2, LayerOp::Fc1, LayerOp::Proj, LayerOp::Qkv};

const char* linear_name(LayerOp op) {
    switch (op) {
        case LayerOp::Qkv: return "QKV";
        case LayerOp::Proj: return "the projection";
        case LayerOp::Fc1: return "FC1";
        default: return "FC2";
    }
}

}  // namespace

// A layer's (sub-)batch is done once its input gradient has left (LayerNorm-1's backward) and the
// four linears' weight gradients have run, in either order: zero-bubble schedules run the weight
// gradients in a later W pass, and until then the cache keeps what they read. Then nothing may use
// the cache again, and the block counts one more micro-batch back-propagated.
void RankRunner::finish_layer_backward(const Key& key) {
    const auto it = backward_ends_.find(key);
    if (it == backward_ends_.end() || !it->second.input_grad || !weight_grads_done(key, nullptr)) return;
    const bool whole = it->second.whole;
    backward_ends_.erase(it);
    caches_.erase(key);
    routes_.erase(key);
    for (auto s = shadow_.begin(); s != shadow_.end();) s = s->first.first == key ? shadow_.erase(s) : std::next(s);
    if (whole) finish_block(std::get<1>(key));
}

// The four linears' weight gradients; a mixture-of-experts layer's MLP has no FC1 / FC2 but the
// GEMMs of moe_weight_grads_done. `missing` (optional) names the first one not run.
bool RankRunner::weight_grads_done(const Key& key, std::string* missing) const {
    const auto it = backward_ends_.find(key);
    const std::set<LayerOp> none;
    const std::set<LayerOp>& done = it == backward_ends_.end() ? none : it->second.weight_grads;
    const bool moe = has_experts(std::get<1>(key));
    for (LayerOp op : kLinears) {
        if (moe && (op == LayerOp::Fc1 || op == LayerOp::Fc2)) continue;
        if (done.count(op) == 0) {
            if (missing) *missing = linear_name(op);
            return false;
        }
    }
    return !moe || moe_weight_grads_done(key, missing);
}

void RankRunner::require_weight_grads_done() const {
    for (const auto& [key, ends] : backward_ends_) {
        const std::string where = "layer " + std::to_string(std::get<1>(key)) + " micro-batch " + std::to_string(std::get<0>(key));
        if (!ends.input_grad) throw std::runtime_error(where + ": input gradient never computed");
        std::string missing;
        if (!weight_grads_done(key, &missing)) throw std::runtime_error(where + ": weight gradient of " + missing + " never computed");
    }
}

void RankRunner::layer_forward(LayerOp op, const OpTag& tag, Phase phase, const sim::Op& o) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const LayerParams& w = out_.weights.layers.at(static_cast<std::size_t>(tag.layer));
    const GptDims& d = ctx_.dims;
    const int local = d.hidden / t();
    const AttnShape a = attn_shape(std::get<2>(key));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim()));
    const auto set = [&](Field f, Mat v) { put(c, key, f, std::move(v), phase); };
    if (phase == Phase::Forward && o.memory_alloc.value == 0.0 && !summa_later_step(op, key))
        for (Field f : saved_by(op)) unkept_[key].push_back(f);
    if (op == LayerOp::Attn && context()) return context_attention(phase, key);
    if (summa() && summa_forward(op, key, phase)) return;
    if (cube() && cube_forward(op, key)) return;
    if (mesh() && atp_forward(op, key, phase)) return;
    switch (op) {
        case LayerOp::Ln1:
            if (phase == Phase::Forward) c[Field::X] = piece(act_, act_in_, key, "layer input");
            if (need(c, Field::X).rows() != region_rows() / k_) throw std::runtime_error("layer input has the wrong rows");
            set(Field::Ln1, layer_norm(need(c, Field::X), w.ln1_g, w.ln1_b));
            break;
        case LayerOp::Qkv: {
            const Mat qkv = add_bias(need(c, ctx_.sp ? Field::Ln1Full : Field::Ln1) * w.wqkv, w.bqkv);
            set(Field::Q, qkv.middleCols(0, local));
            set(Field::K, qkv.middleCols(local, local));
            set(Field::V, qkv.middleCols(2 * local, local));
            break;
        }
        case LayerOp::Qk: set(Field::Scores, attn_scores(need(c, Field::Q), attended(key, Field::K), a)); break;
        case LayerOp::Softmax:
            set(Field::Probs, causal_softmax(need(c, Field::Scores), scale, a.seq));
            c.erase(Field::Scores);  // the backward uses the probabilities only
            break;
        case LayerOp::AttnDropout: set(Field::ProbsD, need(c, Field::Probs)); break;
        case LayerOp::Av: set(Field::Ctx, attn_context(need(c, Field::ProbsD), attended(key, Field::V), a)); break;
        case LayerOp::Attn:  // QK^T, softmax and PV in one kernel (no dropout: fused attention runs without it)
            set(Field::Probs, causal_softmax(attn_scores(need(c, Field::Q), attended(key, Field::K), a), scale, a.seq));
            set(Field::ProbsD, need(c, Field::Probs));
            set(Field::Ctx, attn_context(need(c, Field::ProbsD), attended(key, Field::V), a));
            break;
        case LayerOp::Proj: set(Field::ProjPartial, need(c, Field::Ctx) * w.wproj); break;
        case LayerOp::Bda1:
            set(Field::H1, need(c, Field::X) + add_bias(reduced(c, Field::ProjPartial, Field::ProjRed), w.bproj));
            for (Field f : {Field::ProjPartial, Field::ProjRed, Field::Ln1Full}) c.erase(f);
            break;
        case LayerOp::Ln2: set(Field::Ln2, layer_norm(need(c, Field::H1), w.ln2_g, w.ln2_b)); break;
        case LayerOp::Fc1: set(Field::A1, add_bias(need(c, ctx_.sp ? Field::Ln2Full : Field::Ln2) * w.w1, w.b1)); break;
        case LayerOp::Act: set(Field::G1, gelu(need(c, Field::A1))); break;
        case LayerOp::Fc2: set(Field::Fc2Partial, need(c, Field::G1) * w.w2); break;
        case LayerOp::Bda2: {
            Mat out = need(c, Field::H1) + (w.moe ? moe_output(c, w) : add_bias(reduced(c, Field::Fc2Partial, Field::Fc2Red), w.b2));
            for (Field f : {Field::Fc2Partial, Field::Fc2Red, Field::Ln2Full}) c.erase(f);
            if (phase == Phase::Forward) {
                join(act_, act_out_, {tag.micro, tag.layer + 1, std::get<2>(key)}, std::move(out));
                drop_unkept(key);
            }
            break;
        }
        case LayerOp::Rope:  // numerically inert (op_codes.cpp): the reference model has no positions
        case LayerOp::Count: throw std::runtime_error("not a layer kernel");
    }
}

void RankRunner::drop_unkept(const Key& key) {
    Cache& c = cache(key);
    for (Field f : unkept_[key]) {
        const auto it = c.find(f);
        if (it == c.end()) continue;
        shadow_[{key, f}] = std::move(it->second);
        c.erase(it);
    }
    unkept_.erase(key);
}

void RankRunner::layer_backward(LayerOp op, bool wgrad, const OpTag& tag) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const LayerParams& w = out_.weights.layers.at(static_cast<std::size_t>(tag.layer));
    LayerParams& g = out_.grads.layers.at(static_cast<std::size_t>(tag.layer));
    const GptDims& d = ctx_.dims;
    const int local = d.hidden / t();
    const AttnShape a = attn_shape(std::get<2>(key));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim()));
    const bool sp = ctx_.sp;
    // The mesh modes end their layers' backward in atp_exec.cpp; 1d in finish_layer_backward.
    if (wgrad && linear(op) && !mesh()) backward_ends_[key].weight_grads.insert(op);
    if (op == LayerOp::Attn && context()) return context_attention_backward(key);
    if (summa() && summa_backward(op, wgrad, key)) return;
    if (cube() && cube_backward(op, wgrad, key)) return;
    if (mesh() && atp_backward(op, wgrad, key)) return;
    switch (op) {
        case LayerOp::Bda2:
            c[Field::GOut] = piece(grad_, grad_in_, {tag.micro, tag.layer + 1, std::get<2>(key)}, "output gradient");
            if (!w.moe) g.b2 += column_sums(c[Field::GOut]);
            else if (w.shared) g.sb2 += column_sums(c[Field::GOut]);  // the shared experts' FC2 bias
            break;
        case LayerOp::Fc2: {
            const Mat& dy = need(c, sp ? Field::GOutFull : Field::GOut);
            if (wgrad) g.w2 += need(c, Field::G1).transpose() * dy;
            else c[Field::DG1] = dy * w.w2.transpose();
            break;
        }
        case LayerOp::Act: c[Field::DA1] = gelu_backward(need(c, Field::A1), need(c, Field::DG1)); break;
        case LayerOp::Fc1:
            if (wgrad) {
                g.w1 += need(c, sp ? Field::Ln2Regather : Field::Ln2).transpose() * need(c, Field::DA1);
                g.b1 += column_sums(need(c, Field::DA1));
            } else {
                c[Field::DLn2Partial] = need(c, Field::DA1) * w.w1.transpose();
            }
            break;
        case LayerOp::Ln2: {
            const LnGrads l = layer_norm_backward(need(c, Field::H1), w.ln2_g,
                                                  w.moe ? moe_input_grad(c, w) : reduced(c, Field::DLn2Partial, Field::DLn2));
            g.ln2_g += l.dg;
            g.ln2_b += l.db;
            c[Field::GH1] = need(c, Field::GOut) + l.dx;
            break;
        }
        case LayerOp::Bda1:
            c[Field::GProj] = need(c, Field::GH1);
            g.bproj += column_sums(c[Field::GProj]);
            break;
        case LayerOp::Proj: {
            const Mat& dy = need(c, sp ? Field::GProjFull : Field::GProj);
            if (wgrad) g.wproj += need(c, Field::Ctx).transpose() * dy;
            else c[Field::DCtx] = dy * w.wproj.transpose();
            break;
        }
        case LayerOp::Av:
            if (wgrad) set_key_grad(key, Field::DV, attn_dv(need(c, Field::ProbsD), need(c, Field::DCtx), a));
            else c[Field::DProbsD] = attn_dprobs(need(c, Field::DCtx), attended(key, Field::V), a);
            break;
        case LayerOp::AttnDropout: c[Field::DProbs] = need(c, Field::DProbsD); break;
        case LayerOp::Softmax:
            c[Field::DScores] = causal_softmax_backward(need(c, Field::Probs), need(c, Field::DProbs), scale);
            break;
        case LayerOp::Qk:
            if (wgrad) set_key_grad(key, Field::DK, attn_dk(need(c, Field::DScores), need(c, Field::Q), a));
            else c[Field::DQ] = attn_dq(need(c, Field::DScores), attended(key, Field::K), a);
            break;
        case LayerOp::Attn: {  // dV, dP, dS, dQ, dK in one kernel
            set_key_grad(key, Field::DV, attn_dv(need(c, Field::ProbsD), need(c, Field::DCtx), a));
            const Mat dprobs = attn_dprobs(need(c, Field::DCtx), attended(key, Field::V), a);
            c[Field::DScores] = causal_softmax_backward(need(c, Field::Probs), dprobs, scale);
            set_key_grad(key, Field::DK, attn_dk(need(c, Field::DScores), need(c, Field::Q), a));
            c[Field::DQ] = attn_dq(need(c, Field::DScores), attended(key, Field::K), a);
            break;
        }
        case LayerOp::Qkv: {
            const Mat dqkv = concat_columns(need(c, Field::DQ), need(c, Field::DK), need(c, Field::DV));
            if (dqkv.cols() != 3 * local) throw std::runtime_error("QKV gradient has the wrong width");
            if (wgrad) {
                g.wqkv += need(c, sp ? Field::Ln1Regather : Field::Ln1).transpose() * dqkv;
                g.bqkv += column_sums(dqkv);
                finish_layer_backward(key);
            } else {
                c[Field::DLn1Partial] = dqkv * w.wqkv.transpose();
            }
            break;
        }
        case LayerOp::Ln1: {
            const LnGrads l = layer_norm_backward(need(c, Field::X), w.ln1_g, reduced(c, Field::DLn1Partial, Field::DLn1));
            g.ln1_g += l.dg;
            g.ln1_b += l.db;
            backward_ends_[key].whole = join(grad_, grad_out_, key, need(c, Field::GH1) + l.dx);
            backward_ends_[key].input_grad = true;
            finish_layer_backward(key);
            break;
        }
        case LayerOp::Rope:  // numerically inert (op_codes.cpp): the reference model has no positions
        case LayerOp::Count: throw std::runtime_error("not a layer kernel");
    }
}

}  // namespace cuboid::cpu
