// The measurement passes of cuboid-calibrate; each appends to `out` (and to out.notes what it
// skipped and why). C++17 declarations, implemented in the CUDA sources of this folder.
#pragma once

#include <string>

#include "calibrate/fit/measurements.hpp"
#include "calibrate/fit/plan.hpp"

namespace cuboid::calibrate {

// Number of visible CUDA devices; 0 with the reason in `why` when there is none or the runtime
// fails (no driver, CUDA_VISIBLE_DEVICES empty).
int visible_devices(std::string& why);
DeviceInfo query_device(int device, int device_count);

void measure_launch(int device, const Plan& plan, Measurements& out);
void measure_host_copies(int device, const Plan& plan, Measurements& out);
void measure_gemms(int device, const Plan& plan, Measurements& out);
void measure_memory_kernels(int device, const Plan& plan, Measurements& out);
// NCCL over the first g GPUs of the node for each group size g of the plan (single process,
// ncclCommInitAll, one host thread per GPU).
void measure_collectives(const Plan& plan, int device_count, Measurements& out);

// Under mpirun (built with MPI and NCCL only): this process's place, one process per GPU.
struct MpiPlace {
    int rank = 0, size = 1;      // in the whole job
    int node = 0, nodes = 1;     // nodes in world-rank order
    int local_rank = 0;          // on this node: also the GPU this process drives
    int gpus_per_node = 1;       // processes on the smallest node
};
MpiPlace mpi_start(int* argc, char*** argv);
void mpi_barrier();
void mpi_finish();
void mpi_abort(int code);
// NCCL over the plan's node-local group sizes (on node 0) and its groups across nodes; every
// process calls it, world rank 0 receives the points.
void measure_collectives_mpi(const Plan& plan, const MpiPlace& me, Measurements& out);

}  // namespace cuboid::calibrate
