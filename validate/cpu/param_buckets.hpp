// Parameters of a set of blocks as one flat bucket (the order of for_each_param_of), and which
// elements of such a bucket a data-parallel rank owns under ZeRO: what the gradient reductions
// and parameter gathers of data_exec.cpp and fsdp_exec.cpp move.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

// Which parameters of the blocks a bucket holds: a mixture-of-experts model reduces (and, under
// ZeRO, shards) its routed experts over the expert-data group and the rest over the data group,
// in buckets of their own (Megatron-Core's DDP keeps the expert-parallel parameters apart).
enum class Part : std::uint8_t { All, Dense, Experts };
inline bool in_part(const ParamRef& r, Part part) {
    return part == Part::All || (part == Part::Experts) == is_expert(r.split);
}

template <class F>
void each_param(GptParams& p, const std::vector<int>& blocks, F&& f, Part part = Part::All) {
    for (int b : blocks)
        for_each_param_of(p, b, [&](const ParamRef& r, Mat& m) {
            if (in_part(r, part)) f(r, m);
        });
}

std::vector<Mat*> matrices(GptParams& p, const std::vector<int>& blocks);
std::vector<double> flatten(GptParams& p, const std::vector<int>& blocks, Part part = Part::All);
void unflatten(GptParams& p, const std::vector<int>& blocks, const std::vector<double>& v, Part part = Part::All);

// The members' buffers of one exchange added element by element; throws `mismatch` when their
// sizes differ.
std::vector<double> elementwise_sum(const std::vector<std::vector<double>>& parts, const char* mismatch);

// 1 where replica `member` of `d` owns the element of the flattened bucket, else 0: a contiguous
// 1/d of the bucket, except the tied word embedding, which gets a 1/d of its own.
std::vector<double> owned_elements(GptParams& g, const std::vector<int>& blocks, std::size_t member, std::size_t d,
                                   Part part = Part::All);

}  // namespace cuboid::cpu
