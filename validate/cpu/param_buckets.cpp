#include "validate/cpu/param_buckets.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cuboid::cpu {
namespace {

// The tied word embedding (wemb on the first stage, its copy wout on the last, both [V/t, h]).
bool tied_word_matrix(const ParamRef& r) { return std::string(r.name) == "wemb" || std::string(r.name) == "wout"; }

}  // namespace

std::vector<double> elementwise_sum(const std::vector<std::vector<double>>& parts, const char* mismatch) {
    std::vector<double> sum(parts.front().size(), 0.0);
    for (const std::vector<double>& p : parts) {
        if (p.size() != sum.size()) throw std::runtime_error(mismatch);
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += p[i];
    }
    return sum;
}

std::vector<Mat*> matrices(GptParams& p, const std::vector<int>& blocks) {
    std::vector<Mat*> out;
    each_param(p, blocks, [&](const ParamRef&, Mat& m) { out.push_back(&m); });
    return out;
}

std::vector<double> flatten(GptParams& p, const std::vector<int>& blocks, Part part) {
    std::vector<double> v;
    each_param(p, blocks, [&](const ParamRef&, Mat& m) { v.insert(v.end(), m.data(), m.data() + m.size()); }, part);
    return v;
}

void unflatten(GptParams& p, const std::vector<int>& blocks, const std::vector<double>& v, Part part) {
    std::size_t at = 0;
    each_param(p, blocks, [&](const ParamRef&, Mat& m) {
        if (at + static_cast<std::size_t>(m.size()) > v.size()) throw std::runtime_error("bucket shorter than its parameters");
        std::copy(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + m.size()), m.data());
        at += static_cast<std::size_t>(m.size());
    }, part);
}

// Elements of a reduce-scattered bucket that replica `member` of `d` owns: a contiguous 1/d of the
// flattened bucket, except the tied word embedding, which gets a 1/d of its own. Megatron-LM puts
// that parameter in a bucket of its own under the distributed optimizer (param_and_grad_buffer.py,
// _does_param_require_new_bucket: "the first and last pipeline stage partition optimizer state for
// the shared embedding parameters the same way across DP replicas, allowing the DP reduce-scatter
// to be before the embedding all-reduce"); the program keeps its bytes in the bucket it completes.
std::vector<double> owned_elements(GptParams& g, const std::vector<int>& blocks, std::size_t member, std::size_t d,
                                   Part part) {
    std::size_t rest = 0;
    each_param(g, blocks, [&](const ParamRef& r, Mat& m) { rest += tied_word_matrix(r) ? 0 : static_cast<std::size_t>(m.size()); }, part);
    std::vector<double> owned;
    std::size_t at = 0;
    each_param(g, blocks, [&](const ParamRef& r, Mat& m) {
        const auto n = static_cast<std::size_t>(m.size());
        const bool own = tied_word_matrix(r);
        const std::size_t lo = member * (own ? n : rest) / d, hi = (member + 1) * (own ? n : rest) / d;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t k = own ? i : at + i;
            owned.push_back(k >= lo && k < hi ? 1.0 : 0.0);
        }
        if (!own) at += n;
    }, part);
    return owned;
}

}  // namespace cuboid::cpu
