// The published-data check: predicts every measured row of the Megatron SC'21 table and of the
// vTrain multi-node set, and compares with the measured iteration time.
#pragma once

#include <string>
#include <vector>

namespace cuboid::validate {

struct CheckRow {
    std::string set;        // "megatron-sc21" | "vtrain"
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
    bool progress = false;  // one line per row on standard error
};

std::vector<CheckRow> run_megatron_rows(const CheckOptions& options);
std::vector<CheckRow> run_vtrain_rows(const CheckOptions& options);

}  // namespace cuboid::validate
