// Goodput at scale: the fraction of wall-clock time a training job spends on useful iterations
// when GPUs fail, it checkpoints, and it restarts from the last checkpoint.
//
// Failures arrive as a Poisson process at `failures_per_gpu_day` per GPU, so the job's mean time
// between failures is M = 1 / (rate * gpus). A checkpoint of the model state (weights and
// optimizer state) takes delta = bytes / storage bandwidth; a restart takes R = the checkpoint's
// read at the same bandwidth plus `restart_overhead_s` (scheduling, initialisation). The
// checkpoint interval tau defaults to Daly's optimum (Daly 2006, "A higher order estimate of the
// optimum checkpoint interval for restart dumps", eq. 37; Young 1974's sqrt(2 delta M) to first
// order), and the expected wall time of a job of T useful seconds is Daly's eq. 20:
//     T_wall = M e^(R/M) (e^((tau + delta)/M) - 1) T / tau,
// so goodput = T / T_wall. Not modelled: asynchronous checkpointing (which hides most of delta),
// failures during a restart beyond what eq. 20 contains, stragglers, planned maintenance.
#pragma once

#include <optional>

namespace cuboid {

struct ReliabilitySpec {
    // Unexpected interruptions per GPU per day. Default: Llama 3's pre-training, 419 unexpected
    // interruptions in a 54-day window on 16,384 H100 GPUs (Llama 3 paper, arXiv:2407.21783,
    // §3.3.4 and Table 5): 419 / (16,384 x 54) = 4.74e-4.
    std::optional<double> failures_per_gpu_day;
    // Storage bandwidth for writing and reading checkpoints, GB/s for the whole job. Default: the
    // Llama 3 cluster's Tectonic storage, 2 TB/s sustained (same paper, §3.3.1).
    std::optional<double> checkpoint_gb_per_s;
    std::optional<double> checkpoint_interval_s;  // default: Daly's optimum
    std::optional<double> restart_overhead_s;     // beyond the checkpoint read; default 0
};

inline constexpr double kLlama3FailuresPerGpuDay = 419.0 / (16384.0 * 54.0);
inline constexpr double kLlama3StorageGbPerS = 2000.0;

struct Goodput {
    double failures_per_gpu_day = 0.0;
    double storage_gb_per_s = 0.0;
    double mtbf_s = 0.0;                 // the job's mean time between failures
    double checkpoint_bytes = 0.0;       // weights + optimizer state of the whole model
    double checkpoint_write_s = 0.0;     // delta
    double restart_s = 0.0;              // R
    double checkpoint_interval_s = 0.0;  // tau
    bool interval_optimal = true;        // tau is Daly's optimum (not given)
    double goodput = 1.0;                // useful / wall time
    // Expected wall time; none when it is beyond any reckoning (failures faster than the job
    // can checkpoint: goodput 0).
    std::optional<double> effective_time_to_train_s;
};

// Daly's optimum interval for checkpoint time delta and mean time between failures M.
double daly_interval(double delta, double mtbf);
// Daly's expected wall time for `useful` seconds of work (eq. 20).
double expected_wall_time(double useful, double tau, double delta, double restart, double mtbf);

// The job's goodput for `ideal_s` seconds of training on `gpus` GPUs with `checkpoint_bytes` of
// state to save.
Goodput goodput_of(const ReliabilitySpec& spec, double ideal_s, int gpus, double checkpoint_bytes);

}  // namespace cuboid
