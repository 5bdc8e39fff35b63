// The published-data check: predicts every measured row of the Megatron SC'21 table and of the
// vTrain multi-node set, and compares with the measured iteration time.
#pragma once

#include <string>
#include <vector>

namespace cuboid::validate {

struct CheckRow {
    std::string set;        // "megatron-sc21" | "vtrain" | "vtrain-single"
    std::string group;      // rows compared for rank order together (the model)
    std::string label;      // what identifies the row (plan)
    double predicted_s = 0.0;
    double measured_s = 0.0;
    std::string failure;    // non-empty: the row could not be simulated (and why)
};

struct CheckOptions {
    std::string data_dir = "validate/data";
    std::string scenario_dir = "scenarios";
    bool megatron = true;
    bool vtrain = true;
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

}  // namespace cuboid::validate
