#include "strategies/cli/sweep_mpi.hpp"

#include <cstdlib>
#include <numeric>
#include <ostream>
#include <stdexcept>

#include <fmt/ostream.h>

#include "strategies/cli/run_command.hpp"

#if CUBOID_WITH_MPI
#include <mpi.h>
#endif

namespace cuboid::cli {
namespace {

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return *end == '\0' && n >= 0 ? static_cast<int>(n) : fallback;
}

}  // namespace

bool mpi_built() { return CUBOID_WITH_MPI != 0; }

int launcher_world_size() { return env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1)); }

int launcher_world_rank() { return env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", 0)); }

int run_in_processes(const char* command, std::ostream& err, const std::function<int()>& single,
                     const std::function<int()>& across) {
    const int launched = launcher_world_size();
    if (launched <= 1) return single();
    if (!mpi_built()) {
        // Every rank would print it; one is enough.
        if (launcher_world_rank() == 0)
            fmt::print(err, "cuboid: error: started as {} MPI processes (mpirun/srun), but this cuboid was built "
                            "without MPI (configure found no MPI library, or CUBOID_MPI=OFF); install "
                            "libopenmpi-dev and rebuild, or run cuboid {} without mpirun\n", launched, command);
        return kExitFailure;
    }
    return across();
}

std::vector<std::size_t> rank_share(std::size_t total, int rank, int size) {
    std::vector<std::size_t> share;
    for (std::size_t i = static_cast<std::size_t>(rank); i < total; i += static_cast<std::size_t>(size))
        share.push_back(i);
    return share;
}

#if CUBOID_WITH_MPI

MpiSession::MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::barrier() const { MPI_Barrier(MPI_COMM_WORLD); }

bool MpiSession::any(bool mine) const {
    int in = mine ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out != 0;
}

std::vector<SweepShare> MpiSession::gather(const SweepShare& mine) const {
    std::vector<SweepShare> shares;
    for (const auto& bytes : gather_bytes(encode_share(mine))) shares.push_back(decode_share(bytes));
    return shares;
}

std::vector<std::vector<std::uint8_t>> MpiSession::gather_bytes(const std::vector<std::uint8_t>& bytes) const {
    const int length = static_cast<int>(bytes.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(lengths.size(), 0);
    if (rank_ == 0) std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
    std::vector<std::uint8_t> all(rank_ == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0);
    MPI_Gatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, 0,
                MPI_COMM_WORLD);
    std::vector<std::vector<std::uint8_t>> shares;
    if (rank_ != 0) return shares;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
        const auto begin = all.begin() + offsets[r];
        shares.emplace_back(begin, begin + lengths[r]);
    }
    return shares;
}

#else

MpiSession::MpiSession() {
    throw std::runtime_error("this cuboid was built without MPI (CUBOID_MPI=OFF, or no MPI library at configure time)");
}

MpiSession::~MpiSession() = default;

void MpiSession::barrier() const {}

bool MpiSession::any(bool mine) const { return mine; }

std::vector<SweepShare> MpiSession::gather(const SweepShare& mine) const { return {mine}; }

std::vector<std::vector<std::uint8_t>> MpiSession::gather_bytes(const std::vector<std::uint8_t>& mine) const {
    return {mine};
}

#endif

}  // namespace cuboid::cli
