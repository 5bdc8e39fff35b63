#include "validate/cpu/tiny_gpt.hpp"

#include <random>
#include <stdexcept>

namespace cuboid::cpu {

GptDims GptDims::of(const ModelSpec& m) {
    if (m.swiglu || m.mla() || m.kv_heads_or_default() != m.heads || m.attention_width_differs())
        throw std::invalid_argument(
            "CPU executor: GPT style models only (no SwiGLU, no grouped-query or latent attention, heads x head_dim = hidden)");
    return GptDims{m.layers, m.hidden, m.heads, m.ffn_or_default(), m.seq_len, m.vocab};
}

namespace {

template <class P, class M, class F>
void visit_block(P& p, int block, F&& f) {
    if (block == kEmbeddingBlock) {
        f(ParamRef{block, "wemb", Split::Rows}, p.wemb);
        f(ParamRef{block, "wpos", Split::Replicated}, p.wpos);
        return;
    }
    if (block == kHeadBlock) {
        f(ParamRef{block, "lnf_g", Split::Replicated}, p.lnf_g);
        f(ParamRef{block, "lnf_b", Split::Replicated}, p.lnf_b);
        f(ParamRef{block, "wout", Split::Rows}, p.wout);
        return;
    }
    auto& l = p.layers[static_cast<std::size_t>(block)];
    f(ParamRef{block, "ln1_g", Split::Replicated}, l.ln1_g);
    f(ParamRef{block, "ln1_b", Split::Replicated}, l.ln1_b);
    f(ParamRef{block, "wqkv", Split::QkvColumns}, l.wqkv);
    f(ParamRef{block, "bqkv", Split::QkvColumns}, l.bqkv);
    f(ParamRef{block, "wproj", Split::Rows}, l.wproj);
    f(ParamRef{block, "bproj", Split::Replicated}, l.bproj);
    f(ParamRef{block, "ln2_g", Split::Replicated}, l.ln2_g);
    f(ParamRef{block, "ln2_b", Split::Replicated}, l.ln2_b);
    f(ParamRef{block, "w1", Split::Columns}, l.w1);
    f(ParamRef{block, "b1", Split::Columns}, l.b1);
    f(ParamRef{block, "w2", Split::Rows}, l.w2);
    f(ParamRef{block, "b2", Split::Replicated}, l.b2);
}

template <class P, class F>
void visit_all(P& p, F&& f) {
    visit_block<P, Mat>(p, kEmbeddingBlock, f);
    for (int i = 0; i < static_cast<int>(p.layers.size()); ++i) visit_block<P, Mat>(p, i, f);
    visit_block<P, Mat>(p, kHeadBlock, f);
}

// Column ranges of one rank: [begin, begin + width) of `parts` equal parts of `n`.
Mat take_columns(const Mat& m, int n, int i, int t) { return m.middleCols(n / t * i, n / t); }

}  // namespace

void for_each_param(GptParams& p, const std::function<void(const ParamRef&, Mat&)>& f) { visit_all(p, f); }
void for_each_param(const GptParams& p, const std::function<void(const ParamRef&, const Mat&)>& f) {
    visit_all(p, f);
}
void for_each_param_of(GptParams& p, int block, const std::function<void(const ParamRef&, Mat&)>& f) {
    visit_block<GptParams, Mat>(p, block, f);
}

GptParams init_params(const GptDims& d, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    const auto random = [&](int r, int c, double scale, double mean) {
        Mat m(r, c);
        for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = mean + scale * normal(rng);
        return m;
    };
    const int h = d.hidden;
    // Scales ~ 1/sqrt(fan-in) keep activations O(1), so relative errors stay meaningful.
    const double w = 1.0 / std::sqrt(static_cast<double>(h));
    GptParams p;
    p.wemb = random(d.vocab, h, w, 0.0);  // also the output layer (tied): logits O(1)
    p.wpos = random(d.seq, h, 0.5, 0.0);
    for (int l = 0; l < d.layers; ++l) {
        LayerParams x;
        x.ln1_g = random(1, h, 0.1, 1.0);
        x.ln1_b = random(1, h, 0.1, 0.0);
        x.wqkv = random(h, 3 * h, w, 0.0);
        x.bqkv = random(1, 3 * h, 0.1, 0.0);
        x.wproj = random(h, h, w, 0.0);
        x.bproj = random(1, h, 0.1, 0.0);
        x.ln2_g = random(1, h, 0.1, 1.0);
        x.ln2_b = random(1, h, 0.1, 0.0);
        x.w1 = random(h, d.ffn, w, 0.0);
        x.b1 = random(1, d.ffn, 0.1, 0.0);
        x.w2 = random(d.ffn, h, 1.0 / std::sqrt(static_cast<double>(d.ffn)), 0.0);
        x.b2 = random(1, h, 0.1, 0.0);
        p.layers.push_back(std::move(x));
    }
    p.lnf_g = random(1, h, 0.1, 1.0);
    p.lnf_b = random(1, h, 0.1, 0.0);
    p.wout = p.wemb;  // tied
    return p;
}

GptParams zeros_like(const GptParams& p) {
    GptParams z = p;
    for_each_param(z, [](const ParamRef&, Mat& m) { m.setZero(); });
    return z;
}

Mat shard_of(const Mat& full, Split split, const GptDims& d, int i, int t) {
    if (full.size() == 0) return full;
    switch (split) {
        case Split::Replicated: return full;
        case Split::Columns: return take_columns(full, static_cast<int>(full.cols()), i, t);
        case Split::Rows: return full.middleRows(full.rows() / t * i, full.rows() / t);
        case Split::QkvColumns: {
            const int h = d.hidden, w = h / t;
            Mat out(full.rows(), 3 * w);
            for (int part = 0; part < 3; ++part) out.middleCols(part * w, w) = full.middleCols(part * h + i * w, w);
            return out;
        }
    }
    return full;
}

void place_shard(Mat& full, const Mat& shard, Split split, const GptDims& d, int i, int t) {
    switch (split) {
        case Split::Replicated: full = shard; return;
        case Split::Columns: full.middleCols(full.cols() / t * i, full.cols() / t) = shard; return;
        case Split::Rows: full.middleRows(full.rows() / t * i, full.rows() / t) = shard; return;
        case Split::QkvColumns: {
            const int h = d.hidden, w = h / t;
            for (int part = 0; part < 3; ++part) full.middleCols(part * h + i * w, w) = shard.middleCols(part * w, w);
            return;
        }
    }
}

Batch make_batch(const GptDims& d, int sequences, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> token(0, d.vocab - 1);
    Batch b;
    for (int q = 0; q < sequences; ++q) {
        std::vector<int> seq(static_cast<std::size_t>(d.seq + 1));
        for (int& x : seq) x = token(rng);
        b.tokens.emplace_back(seq.begin(), seq.end() - 1);
        b.targets.emplace_back(seq.begin() + 1, seq.end());
    }
    return b;
}

}  // namespace cuboid::cpu
