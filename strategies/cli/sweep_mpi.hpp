// `cuboid sweep` across the ranks of an MPI job (mpirun -np N, srun): each rank runs an
// interleaved share of the points (point i on rank i mod N) on its own threads, and rank 0
// gathers the outcomes and writes the one output, the same as a single process's.
//
// Why a static interleaved split and not a work queue: the ranks need no message until the end,
// so a slow or failing rank holds up no other rank's points, and the points of a sweep differ in
// cost mostly along its axes (more pipeline stages, more micro-batches), which interleaving
// spreads evenly over the ranks (the last axis varies fastest, so every rank gets every value of
// it in turn). Within a rank the threads still take points one by one from a shared counter.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "strategies/cli/sweep_outcome_codec.hpp"

namespace cuboid::cli {

// Whether this cuboid was built with MPI (CUBOID_MPI found an MPI library at configure time).
bool mpi_built();

// The processes a launcher started for this job, from its environment (OpenMPI's mpirun sets
// OMPI_COMM_WORLD_SIZE, MPICH and Slurm's PMI set PMI_SIZE); 1 outside any launcher.
int launcher_world_size();
// This process's rank by the same environment (0 outside any launcher).
int launcher_world_rank();

// `single` outside a launcher (or under one that started one process), else `across` (every rank
// of the job calls it). Started as several processes by a cuboid built without MPI: rank 0 says
// how to get one (`command`: the subcommand's name) and every rank returns 1.
int run_in_processes(const char* command, std::ostream& err, const std::function<int()>& single,
                     const std::function<int()>& across);

// The indices of `total` points that rank `rank` of `size` runs: rank, rank + size, ...
std::vector<std::size_t> rank_share(std::size_t total, int rank, int size);

// MPI initialised for the lifetime of the value (worker threads make no MPI call: funneled).
// Throws std::runtime_error when cuboid was built without MPI.
class MpiSession {
public:
    MpiSession();
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    // Collective: every rank passes its share; rank 0 gets every rank's (at the rank's index),
    // the others an empty vector.
    std::vector<SweepShare> gather(const SweepShare& mine) const;
    // Collective, the same for any bytes (a search's share, search_share.hpp).
    std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& mine) const;

    // Collective: whether `mine` holds on any rank (every rank gets the answer).
    bool any(bool mine) const;

    // Collective: returns when every rank has called it. The ranks wait here for rank 0 to write
    // the output, because mpirun ends the whole job as soon as one rank exits with a failure.
    void barrier() const;

private:
    int rank_ = 0;
    int size_ = 1;
};

}  // namespace cuboid::cli
