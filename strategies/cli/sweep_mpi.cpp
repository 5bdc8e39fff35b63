#include "strategies/cli/sweep_mpi.hpp"

#include <cstdlib>
#include <numeric>
#include <stdexcept>

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

std::vector<SweepShare> MpiSession::gather(const SweepShare& mine) const {
    const std::vector<std::uint8_t> bytes = encode_share(mine);
    const int length = static_cast<int>(bytes.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(lengths.size(), 0);
    if (rank_ == 0) std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
    std::vector<std::uint8_t> all(rank_ == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0);
    MPI_Gatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, 0,
                MPI_COMM_WORLD);
    std::vector<SweepShare> shares;
    if (rank_ != 0) return shares;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
        const auto begin = all.begin() + offsets[r];
        shares.push_back(decode_share(std::vector<std::uint8_t>(begin, begin + lengths[r])));
    }
    return shares;
}

#else

MpiSession::MpiSession() {
    throw std::runtime_error("this cuboid was built without MPI (CUBOID_MPI=OFF, or no MPI library at configure time)");
}

MpiSession::~MpiSession() = default;

void MpiSession::barrier() const {}

std::vector<SweepShare> MpiSession::gather(const SweepShare& mine) const { return {mine}; }

#endif

}  // namespace cuboid::cli
