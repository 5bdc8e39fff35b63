#include "validate/cpu/tiny_gpt.hpp"

#include <random>
#include <stdexcept>

namespace cuboid::cpu {

GptDims GptDims::of(const ModelSpec& m) {
    if (m.swiglu || m.mla() || m.kv_heads_or_default() != m.heads || m.attention_width_differs())
        throw std::invalid_argument(
            "CPU executor: GPT style models only (no SwiGLU, no grouped-query or latent attention, heads x head_dim = hidden)");
    if (m.mtp_layers > 0) throw std::invalid_argument("CPU executor: no multi-token prediction (model.mtp_layers)");
    GptDims d{m.layers, m.hidden, m.heads, m.ffn_or_default(), m.seq_len, m.vocab};
    if (m.moe()) {
        d.experts = m.experts;
        d.top_k = m.top_k();
        d.expert_ffn = m.expert_ffn_or_default();
        d.shared_ffn = m.shared_experts * d.expert_ffn;
        d.dense_layers = m.dense_layers;
    }
    return d;
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
    if (l.moe) {
        f(ParamRef{block, "wr", Split::Replicated}, l.wr);
        f(ParamRef{block, "ew1", Split::ExpertColumns}, l.ew1);
        f(ParamRef{block, "eb1", Split::ExpertColumns}, l.eb1);
        f(ParamRef{block, "ew2", Split::ExpertRows}, l.ew2);
        f(ParamRef{block, "eb2", Split::ExpertBias}, l.eb2);
        if (!l.shared) return;
        f(ParamRef{block, "sw1", Split::Columns}, l.sw1);
        f(ParamRef{block, "sb1", Split::Columns}, l.sb1);
        f(ParamRef{block, "sw2", Split::Rows}, l.sw2);
        f(ParamRef{block, "sb2", Split::Replicated}, l.sb2);
        return;
    }
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
        if (d.moe_layer(l)) {
            const int e = d.experts, f = d.expert_ffn;
            x.moe = true;
            x.wr = random(h, e, 2.0 * w, 0.0);  // logits O(1): well separated top-k choices
            x.ew1 = random(h, e * f, w, 0.0);
            x.eb1 = random(1, e * f, 0.1, 0.0);
            x.ew2 = random(e * f, h, 1.0 / std::sqrt(static_cast<double>(f)), 0.0);
            x.eb2 = random(e, h, 0.1, 0.0);
            if (d.shared_ffn > 0) {
                x.shared = true;
                x.sw1 = random(h, d.shared_ffn, w, 0.0);
                x.sb1 = random(1, d.shared_ffn, 0.1, 0.0);
                x.sw2 = random(d.shared_ffn, h, 1.0 / std::sqrt(static_cast<double>(d.shared_ffn)), 0.0);
                x.sb2 = random(1, h, 0.1, 0.0);
            }
        } else {
            x.w1 = random(h, d.ffn, w, 0.0);
            x.b1 = random(1, d.ffn, 0.1, 0.0);
            x.w2 = random(d.ffn, h, 1.0 / std::sqrt(static_cast<double>(d.ffn)), 0.0);
            x.b2 = random(1, h, 0.1, 0.0);
        }
        p.layers.push_back(std::move(x));
    }
    p.lnf_g = random(1, h, 0.1, 1.0);
    p.lnf_b = random(1, h, 0.1, 0.0);
    p.wout = p.wemb;  // tied
    return p;
}

GptParams empty_like(const GptParams& like) {
    GptParams p;
    p.layers.resize(like.layers.size());
    for (std::size_t i = 0; i < like.layers.size(); ++i) {
        p.layers[i].moe = like.layers[i].moe;
        p.layers[i].shared = like.layers[i].shared;
    }
    return p;
}

GptParams zeros_like(const GptParams& p) {
    GptParams z = p;
    for_each_param(z, [](const ParamRef&, Mat& m) { m.setZero(); });
    return z;
}

Mat shard_of(const Mat& full, Split split, const GptDims& d, int i, int t) {
    if (full.size() == 0) return full;
    if (is_expert(split)) throw std::logic_error("an expert parameter is split over the expert groups: expert_shard_of");
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
        default: break;
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
        default: throw std::logic_error("an expert parameter is split over the expert groups: place_expert_shard");
    }
}

namespace {

// Calls f(full_offset, shard_offset, length) for each piece of the rank's expert shard along the
// split dimension: its E/ep experts in order, part a of etp of each expert's f.
template <class F>
void expert_pieces(const GptDims& d, const ExpertCoord& c, F&& f) {
    const int local = d.experts / c.ep, width = d.expert_ffn / c.etp;
    for (int j = 0; j < local; ++j) f((c.e * local + j) * d.expert_ffn + c.a * width, j * width, width);
}

}  // namespace

Mat expert_shard_of(const Mat& full, Split split, const GptDims& d, const ExpertCoord& c) {
    const int local = d.experts / c.ep;
    switch (split) {
        case Split::ExpertColumns: {
            Mat out(full.rows(), local * (d.expert_ffn / c.etp));
            expert_pieces(d, c, [&](int from, int to, int n) { out.middleCols(to, n) = full.middleCols(from, n); });
            return out;
        }
        case Split::ExpertRows: {
            Mat out(local * (d.expert_ffn / c.etp), full.cols());
            expert_pieces(d, c, [&](int from, int to, int n) { out.middleRows(to, n) = full.middleRows(from, n); });
            return out;
        }
        case Split::ExpertBias: return full.middleRows(c.e * local, local);
        default: throw std::logic_error("not an expert parameter: shard_of");
    }
}

void place_expert_shard(Mat& full, const Mat& shard, Split split, const GptDims& d, const ExpertCoord& c) {
    switch (split) {
        case Split::ExpertColumns:
            expert_pieces(d, c, [&](int to, int from, int n) { full.middleCols(to, n) = shard.middleCols(from, n); });
            return;
        case Split::ExpertRows:
            expert_pieces(d, c, [&](int to, int from, int n) { full.middleRows(to, n) = shard.middleRows(from, n); });
            return;
        case Split::ExpertBias: full.middleRows(c.e * (d.experts / c.ep), d.experts / c.ep) = shard; return;
        default: throw std::logic_error("not an expert parameter: place_shard");
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
