// The figures of one iteration that prediction and measurement are compared on. The executor
// writes what it measured in this form as a JSON document (read back with
// `cuboid-validate --measured FILE`; format in docs/validation.md); the prediction fills the same
// struct from the simulation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strategies/run.hpp"

namespace cuboid::validate {

// Where one rank's iteration went: the simulator's breakdown (strategies/run.hpp), here filled
// from measured op intervals by the same rule.
using PartTimes = Breakdown;

struct OpSample {
    std::uint32_t rank = 0;
    std::uint32_t op = 0;    // index in the rank's OpList (compute ops only)
    double seconds = 0.0;    // measured: median over the profiled iterations
};

struct Figures {
    std::string device;                          // "NVIDIA H100 80GB HBM3"
    int gpus = 0;
    std::vector<double> iteration_times_s;       // every timed iteration, slowest rank each
    double iteration_time_s = 0.0;               // their median
    double peak_memory_bytes = 0.0;              // largest over ranks
    std::map<std::string, double> op_kind_seconds;  // per kind, mean over ranks, per iteration
    PartTimes breakdown;                         // of the rank that finished last
    std::vector<OpSample> ops;                   // per compute op times (may be empty)
    std::vector<std::string> notes;
};

nlohmann::json to_json(const Figures& f);
// Throws InputError naming `file` and the key when a required key is missing or mistyped.
Figures figures_from_json(const nlohmann::json& j, const std::string& file);
// The same from the file's text; a text that is not JSON is an InputError too.
Figures figures_from_text(const std::string& text, const std::string& file);
Figures read_figures_file(const std::string& path);

}  // namespace cuboid::validate
