// The catalog name of a CUDA device (hardware_models/catalog/gpus.yaml), for the profile's
// metadata.gpu: the simulator rejects a profile whose gpu differs from the cluster's, so the
// name must be the catalog's, not the driver's. None when the catalog has no such part (then the
// profile carries the driver's name as metadata.device only, and no gpu check is made).
#pragma once

#include <optional>
#include <string>

namespace cuboid::calibrate {

// `name` as cudaDeviceProp::name reports it ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB");
// memory in bytes separates the 40 and 80 GB A100s. PCIe and NVL parts are not matched: their
// clocks and power limits differ from the SXM entries of the catalog.
std::optional<std::string> catalog_gpu_name(const std::string& name, double memory_bytes);

}  // namespace cuboid::calibrate
