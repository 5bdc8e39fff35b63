// NCCL collectives under mpirun: one process per GPU, on one node or across several. The
// communicators are bootstrapped through MPI (rank 0 of each group makes the ncclUniqueId and
// broadcasts it), so groups can span nodes: this is how cuboid-calibrate measures what a
// data-parallel all-reduce or a pipeline hop between nodes costs on the user's own network.
//
// Timing is as in the one-process driver (nccl_sweep.cpp): warm-up, then trials of back-to-back
// calls between CUDA events, all members released together by a barrier; a trial's time is the
// slowest member's (MPI max-reduction), and the median over trials is kept.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "calibrate/cuda/cuda_check.hpp"
#include "calibrate/cuda/nccl_calls.hpp"
#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/fit/stats.hpp"

namespace cuboid::calibrate {
namespace {

void mpi_check(int code, const char* call) {
    if (code != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed (MPI error " + std::to_string(code) + ")");
}
#define CUBOID_MPI(call) mpi_check((call), #call)

// The members of one communicator and this process's rank in it (-1: not a member).
struct GroupShape {
    int ranks = 0;
    int nodes = 1;
    int my_rank = -1;
};

GroupShape node_local_group(const MpiPlace& me, int size) {
    GroupShape g{size, 1, -1};
    if (me.node == 0 && me.local_rank < size) g.my_rank = me.local_rank;
    return g;
}

GroupShape cross_node_group(const MpiPlace& me, const NodeGroup& spec) {
    GroupShape g{spec.ranks(), spec.nodes, -1};
    if (me.node < spec.nodes && me.local_rank < spec.gpus_per_node)
        g.my_rank = me.node * spec.gpus_per_node + me.local_rank;
    return g;
}

// Times every (kind, size) on one group; group rank 0 (world rank 0) appends the points.
void time_group(const Plan& plan, const GroupShape& g, const std::string& algorithm, Measurements& out) {
    MPI_Comm comm = MPI_COMM_NULL;
    CUBOID_MPI(MPI_Comm_split(MPI_COMM_WORLD, g.my_rank >= 0 ? 1 : MPI_UNDEFINED, std::max(g.my_rank, 0), &comm));
    if (g.my_rank >= 0) {
        ncclUniqueId id;
        if (g.my_rank == 0) CUBOID_NCCL(ncclGetUniqueId(&id));
        CUBOID_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
        ncclComm_t nccl = nullptr;
        {
            const ForcedAlgorithm forced(algorithm);
            CUBOID_NCCL(ncclCommInitRank(&nccl, g.ranks, id, g.my_rank));
        }
        {
            RankTimer timer(std::size_t(plan.collective_bytes.back()));
            for (const auto& kind : kinds_for(plan, g.ranks, algorithm))
                for (double bytes : plan.collective_bytes) {
                    auto call = [&] {
                        issue(kind, bytes, g.my_rank, g.ranks, timer.send(), timer.recv(), nccl, timer.stream());
                    };
                    timer.warm_up(call, plan.warmup);
                    std::vector<double> slowest;
                    for (int t = 0; t < plan.repeats; ++t) {
                        CUBOID_MPI(MPI_Barrier(comm));  // start the members' trials together
                        const double mine = timer.seconds_per_call(call);
                        double worst = 0.0;
                        CUBOID_MPI(MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm));
                        slowest.push_back(worst);
                    }
                    if (g.my_rank == 0)
                        out.collectives.push_back({kind, g.ranks, bytes, median(slowest), g.nodes, algorithm});
                }
        }
        ncclCommDestroy(nccl);
        MPI_Comm_free(&comm);
    }
    CUBOID_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

}  // namespace

MpiPlace mpi_start(int* argc, char*** argv) {
    CUBOID_MPI(MPI_Init(argc, argv));
    MpiPlace me;
    CUBOID_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &me.rank));
    CUBOID_MPI(MPI_Comm_size(MPI_COMM_WORLD, &me.size));
    // Processes sharing memory are one node; local ranks follow world ranks, so world rank 0 is
    // local rank 0 of node 0.
    MPI_Comm local = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
    CUBOID_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me.rank, MPI_INFO_NULL, &local));
    CUBOID_MPI(MPI_Comm_rank(local, &me.local_rank));
    int local_size = 0;
    CUBOID_MPI(MPI_Comm_size(local, &local_size));
    CUBOID_MPI(MPI_Comm_split(MPI_COMM_WORLD, me.local_rank == 0 ? 0 : MPI_UNDEFINED, me.rank, &leaders));
    if (me.local_rank == 0) {
        CUBOID_MPI(MPI_Comm_rank(leaders, &me.node));
        CUBOID_MPI(MPI_Comm_size(leaders, &me.nodes));
        MPI_Comm_free(&leaders);
    }
    CUBOID_MPI(MPI_Bcast(&me.node, 1, MPI_INT, 0, local));
    CUBOID_MPI(MPI_Bcast(&me.nodes, 1, MPI_INT, 0, local));
    MPI_Comm_free(&local);
    // Groups take the same GPUs on every node: the smallest node decides.
    CUBOID_MPI(MPI_Allreduce(&local_size, &me.gpus_per_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    return me;
}

void mpi_barrier() { CUBOID_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

void mpi_finish() { MPI_Finalize(); }

void mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void measure_collectives_mpi(const Plan& plan, const MpiPlace& me, Measurements& out) {
    CUBOID_CUDA(cudaSetDevice(me.local_rank));
    int version = 0;
    if (ncclGetVersion(&version) == ncclSuccess)
        out.device.nccl = std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
                          std::to_string(version % 100);
    for (const auto& algorithm : measured_algorithms(plan)) {
        for (int size : plan.group_sizes) time_group(plan, node_local_group(me, size), algorithm, out);
        for (const auto& spec : plan.node_groups) time_group(plan, cross_node_group(me, spec), algorithm, out);
    }
}

}  // namespace cuboid::calibrate
