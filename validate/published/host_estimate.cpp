#include "validate/published/host_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "hardware_models/input_file.hpp"
#include "sim/output_file.hpp"
#include "validate/published/statistics.hpp"

namespace cuboid::validate {
namespace {

std::string read_text(const std::string& path) {
    return read_input_file(path, kMaxYamlFileBytes, "hardware profile");
}

bool top_level_key(const std::string& line) {
    return !line.empty() && line[0] != ' ' && line[0] != '#' && line[0] != '-' && line.find(':') != std::string::npos;
}

HostGridPoint score(const std::vector<CheckRow>& rows) {
    HostGridPoint p;
    std::vector<double> predicted, measured, log_errors;
    for (const CheckRow& r : rows) {
        if (!r.failure.empty()) { ++p.failures; continue; }
        predicted.push_back(r.predicted_s);
        measured.push_back(r.measured_s);
        log_errors.push_back(std::abs(std::log(r.predicted_s / r.measured_s)));
    }
    p.mape = mean_absolute_percentage_error(predicted, measured);
    if (!log_errors.empty()) {
        const auto mid = log_errors.begin() + static_cast<std::ptrdiff_t>(log_errors.size() / 2);
        std::nth_element(log_errors.begin(), mid, log_errors.end());
        p.median_abs_log_error = *mid;
    }
    return p;
}

}  // namespace

std::string with_host_section(const std::string& profile_text, double dispatch_us, const HostSyncVariant& sync) {
    std::istringstream in(profile_text);
    std::string out, line;
    bool in_host = false;
    while (std::getline(in, line)) {
        if (top_level_key(line)) in_host = line.rfind("host:", 0) == 0;
        if (!in_host) out += line + "\n";
    }
    out += fmt::format("host:\n  dispatch_us: {}\n  sync: [{}]\n", dispatch_us, fmt::join(sync.points, ", "));
    return out;
}

std::vector<HostGridPoint> estimate_host_dispatch(CheckOptions options, const HostEstimateOptions& grid) {
    const std::string base = read_text(grid.base_profile);
    const auto temp = std::filesystem::temp_directory_path() / fmt::format("cuboid-host-estimate-{}.yaml", getpid());
    options.profile_override = temp.string();
    std::vector<HostGridPoint> points;
    fmt::print("{:>12} {:<20} {:>8} {:>16} {:>8}\n", "dispatch_us", "sync", "MAPE", "median|ln err|", "failed");
    for (const HostSyncVariant& sync : grid.syncs) {
        for (double us : grid.dispatch_us) {
            sim::write_output_file(temp.string(), with_host_section(base, us, sync));
            HostGridPoint p = score(run_single_rows(options));
            p.dispatch_us = us;
            p.sync = sync.name;
            fmt::print("{:>12.1f} {:<20} {:>7.1f}% {:>16.3f} {:>8}\n", us, sync.name, 100 * p.mape,
                       p.median_abs_log_error, p.failures);
            std::fflush(stdout);
            points.push_back(p);
        }
    }
    std::filesystem::remove(temp);
    return points;
}

}  // namespace cuboid::validate
