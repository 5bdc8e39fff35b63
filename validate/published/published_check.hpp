// The published-data check: predicts every measured row of the Megatron SC'21 table, of the
// vTrain multi-node set and of the published runs on today's stacks (`modern`), and compares
// with the measured iteration time.
#pragma once

#include <string>
#include <vector>

namespace cuboid::validate {

struct CheckRow {
    std::string set;        // "megatron-sc21" | "vtrain" | "vtrain-single" | "modern"
    std::string group;      // rows compared for rank order together (the model)
    std::string label;      // what identifies the row (plan)
    double predicted_s = 0.0;
    double measured_s = 0.0;
    std::string failure;    // non-empty: the row could not be simulated (and why)
    // The simulated plan's peak memory per GPU and the GPU's capacity: a plan that its source
    // ran must fit (peak <= capacity), or cuboid's memory model is wrong for it.
    double peak_memory_gb = 0.0;
    double memory_capacity_gb = 0.0;
    bool out_of_memory() const { return failure.empty() && peak_memory_gb > memory_capacity_gb; }
    // False: the row needs what cuboid does not model (`failure` names it); such a row is listed
    // apart and is not a failed row.
    bool expressible = true;
};

// A row of the `modern` set with what its summaries group by.
struct ModernRow {
    CheckRow check;              // group: the model; label: the row's row_id
    std::string block;           // the source table
    std::string gpu;             // catalog name (as written when not in the catalog)
    std::string precision;       // as written
    int gpus = 0;
    double tokens = 0.0;         // per iteration: global_batch x seq_len
    bool h100_dense = false;     // H100, no mixture of experts, no context or expert parallelism
};

struct CheckOptions {
    std::string data_dir = "validate/data";
    std::string scenario_dir = "scenarios";
    bool megatron = true;
    bool vtrain = true;
    bool modern = true;
    bool single = false;    // the vTrain single-node runs (the calibration set of the host dispatch time)
    bool progress = false;  // one line per row on standard error
    std::size_t threads = 1;  // rows simulated at once (each row is an independent simulation)
    // Non-empty: every row's cluster uses this hardware profile instead of its scenario's.
    std::string profile_override;
};

std::vector<CheckRow> run_megatron_rows(const CheckOptions& options);
std::vector<CheckRow> run_vtrain_rows(const CheckOptions& options);
// The 1,440 vTrain single-node runs (2-8 GPUs of one node), from validate/data/vtrain/
// single_node.yaml with each row's model shape, batch and plan; grouped by model shape.
std::vector<CheckRow> run_single_rows(const CheckOptions& options);
// The published runs on today's stacks (validate/data/modern/published_runs.csv), each on its
// block's base scenario (scenarios/modern/<block>/<gpu>.yaml) with the row's fields set on top;
// a row cuboid cannot express is kept, not expressible, with what it needs (modern_rows.hpp).
std::vector<ModernRow> run_modern_rows(const CheckOptions& options);

}  // namespace cuboid::validate
