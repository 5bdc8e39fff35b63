// Writes a fitted profile as YAML in the format hardware_models/profile.cpp loads
// (docs/hardware_profile.md): format, metadata, kernel_launch_us, gemm, memory, collectives; then
// sections the loader ignores, for the reader: batched_gemm, host_copies, measurements (raw
// medians), notes.
#pragma once

#include <string>

#include "calibrate/fit/tables.hpp"

namespace cuboid::calibrate {

inline constexpr const char* kProfileFormat = "cuboid-hardware-profile/1";

std::string profile_yaml(const FittedProfile& profile);
// Throws std::runtime_error when the file cannot be written.
void write_profile(const FittedProfile& profile, const std::string& path);

}  // namespace cuboid::calibrate
