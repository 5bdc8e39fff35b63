// Parameters of a set of blocks as one flat bucket (the order of for_each_param_of), and which
// elements of such a bucket a data-parallel rank owns under ZeRO: what the gradient reductions
// and parameter gathers of data_exec.cpp and fsdp_exec.cpp move.
#pragma once

#include <cstddef>
#include <vector>

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

template <class F>
void each_param(GptParams& p, const std::vector<int>& blocks, F&& f) {
    for (int b : blocks) for_each_param_of(p, b, f);
}

std::vector<Mat*> matrices(GptParams& p, const std::vector<int>& blocks);
std::vector<double> flatten(GptParams& p, const std::vector<int>& blocks);
void unflatten(GptParams& p, const std::vector<int>& blocks, const std::vector<double>& v);

// The members' buffers of one exchange added element by element; throws `mismatch` when their
// sizes differ.
std::vector<double> elementwise_sum(const std::vector<std::vector<double>>& parts, const char* mismatch);

// 1 where replica `member` of `d` owns the element of the flattened bucket, else 0: a contiguous
// 1/d of the bucket, except the tied word embedding, which gets a 1/d of its own.
std::vector<double> owned_elements(GptParams& g, const std::vector<int>& blocks, std::size_t member, std::size_t d);

}  // namespace cuboid::cpu
