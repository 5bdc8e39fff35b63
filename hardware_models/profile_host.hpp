// The `host:` section of a hardware profile: the CPU time the framework spends issuing each GPU
// op, and where its host thread waits for the GPU.
//
// Eager PyTorch issues every kernel from one Python thread per GPU: the operator's Python and
// C++ dispatch, then cudaLaunchKernel (or the NCCL enqueue). The GPU runs asynchronously behind
// it, so for large kernels the host time hides; for small ones the GPU waits for the host and a
// micro-batch costs a floor of (ops x dispatch time) whatever its size. The value is measured on
// a calibration set (docs/accuracy.md, "Host dispatch"); it cannot come from a datasheet.
// Format:
//   host:
//     dispatch_us: 70          # host time per compute op
//     comm_dispatch_us: 70     # per communication op (default: dispatch_us)
//     sync: [optimizer]        # where the host waits for the GPU: optimizer, pipeline
// Unknown keys in this section are errors (a misspelt key would silently disable a wait).
#pragma once

#include "hardware_models/yaml_reader.hpp"
#include "sim/units.hpp"

namespace cuboid::hw {

struct HostDispatchCosts {
    Time compute{0};        // issuing one compute op
    Time communication{0};  // issuing one collective or point-to-point op
    // Before the optimizer step the host reads the overflow flag / gradient norm with `.item()`
    // (Megatron's found_inf check, DeepSpeed's fp16 overflow check): it waits for every op issued
    // before it.
    bool sync_optimizer = false;
    // After a pipeline receive the host waits for the message and the device (Megatron-LM
    // p2p_communication: req.wait() then torch.cuda.synchronize()).
    bool sync_pipeline = false;
};

// Parses the `host:` map; throws InputError (file, line, key) on an unknown key or a bad value.
HostDispatchCosts parse_host_dispatch(const YamlReader& r);

}  // namespace cuboid::hw
