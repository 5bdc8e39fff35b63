// Measurement of the host dispatch time (hardware_models/profile_host.hpp) on the calibration
// set: the vTrain single-node runs, never the multi-node validation rows. Every point of a grid
// (dispatch time x where the host synchronises) is simulated over all single-node rows, and the
// point with the lowest mean absolute percentage error is the estimate (docs/accuracy.md).
#pragma once

#include <string>
#include <vector>

#include "validate/published/published_check.hpp"

namespace cuboid::validate {

// Where the host waits for the device, as the profile's `sync:` list.
struct HostSyncVariant {
    std::string name;                // "none", "optimizer", "optimizer+pipeline"
    std::vector<std::string> points; // the profile's sync entries
};

struct HostGridPoint {
    double dispatch_us = 0.0;
    std::string sync;
    double mape = 0.0;
    double median_abs_log_error = 0.0;  // median |ln(predicted / measured)|
    int failures = 0;
};

struct HostEstimateOptions {
    std::string base_profile = "hardware_models/profiles/vtrain-a100-node.yaml";
    std::vector<double> dispatch_us{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 120, 150};
    std::vector<HostSyncVariant> syncs{{"none", {}}, {"optimizer", {"optimizer"}},
                                       {"optimizer+pipeline", {"optimizer", "pipeline"}}};
};

// `profile_text` without its top-level `host:` section, with one for these values appended.
std::string with_host_section(const std::string& profile_text, double dispatch_us, const HostSyncVariant& sync);

// One point per (dispatch time, sync variant), in grid order; prints each as it is done.
std::vector<HostGridPoint> estimate_host_dispatch(CheckOptions options, const HostEstimateOptions& grid);

}  // namespace cuboid::validate
