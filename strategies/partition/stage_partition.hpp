// Layers per model chunk for a validated plan: the manual override `parallel.stage_layers`,
// Megatron's uniform split (`parallel.partition: uniform`), or the automatic partitioner
// (default), whose costs come from the ops the program builder emits for one layer and for the
// two ends of the model.
#pragma once

#include <vector>

#include "strategies/layout.hpp"
#include "strategies/partition/partitioner.hpp"

namespace cuboid {

// The partition problem of `scenario` on `layout` (degrees, micro-batches and chunks set):
// per-micro-batch work as the GEMM FLOPs and HBM bytes of the emitted ops, priced on the
// roofline of the scenario's GPU (datasheet peak and bandwidth from the built-in catalog; FLOPs
// alone when the GPU is not in it), memory from the state bytes per parameter and the stored
// activations, in-flight micro-batches per position from the schedule.
PartitionProblem partition_problem(const Scenario& scenario, const Layout& layout);
// The same with the built-in catalog already loaded (hw::Catalog::load_builtin()).
PartitionProblem partition_problem(const Scenario& scenario, const Layout& layout, const hw::Catalog& builtin);

// Layout::chunk_layers for the scenario. Throws InputError at parallel.stage_layers for an
// override that does not give every chunk a layer or does not sum to model.layers.
std::vector<int> stage_partition(const Scenario& scenario, const Layout& layout);
// The same with the built-in catalog already loaded (hw::Catalog::load_builtin()); without it the
// catalog is parsed when the automatic partitioner needs it.
std::vector<int> stage_partition(const Scenario& scenario, const Layout& layout, const hw::Catalog* builtin);

}  // namespace cuboid
