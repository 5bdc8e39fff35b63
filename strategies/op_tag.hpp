// Which part of the model an op works on: a side table beside an OpList, built only on request
// (build_tagged_program, program_builder.hpp), so the simulator pays nothing for it.
//
// Labels name the kind of work ("F.qkv"); executors that run the program's math (the CPU
// executor in validate/cpu/) also need the layer, micro-batch and model chunk of each op.
#pragma once

#include <cstdint>
#include <vector>

namespace cuboid {

struct OpTag {
    std::int32_t layer = -1;      // global transformer layer; -1: not a layer op (embedding, head, pipeline, data)
    std::int32_t micro = -1;      // micro-batch of the pipeline; -1: none (optimizer, late gradient reduction)
    std::int32_t chunk = -1;      // local model chunk (virtual stage) of the stage
    std::int32_t sub_chunk = -1;  // part of the micro-batch when a layer is split for overlap; -1: whole

    // ZeRO-3's per-unit gathers and reductions name their unit in `layer`: a transformer layer
    // (>= 0) or one of these.
    static constexpr std::int32_t kEmbeddingUnit = -2;
    static constexpr std::int32_t kHeadUnit = -3;
};

// One tag per op of each OpList (tags[list][op]).
using ProgramTags = std::vector<std::vector<OpTag>>;

}  // namespace cuboid
