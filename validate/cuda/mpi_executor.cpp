// cuboid-validate as one rank of an MPI job (mpirun -np <ranks>, on one node or several): MPI
// rank r runs program rank r on the GPU whose index is r's rank on its node. NCCL ids travel by
// MPI messages instead of files, so groups may span nodes with no shared folder; the ranks'
// measurements are gathered to rank 0, which aggregates them.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdlib>
#include <iostream>

#include "validate/cuda/gpu_executor.hpp"
#include "validate/cuda/rank_runner.hpp"

namespace cuboid::validate {
namespace {

void mpi_check(int code, const char* call) {
    if (code != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed (MPI error " + std::to_string(code) + ")");
}
#define CUBOID_MPI(call) mpi_check((call), #call)

// MPI guarantees tags up to 32767 (MPI_TAG_UB is at least that); a key is a tag.
constexpr std::uint32_t kMaxTag = 32767;

// The group's first member makes the id and sends it to the others, tagged with the group's key.
// Every rank asks in ascending key order, and a member waits only for a group whose first member
// has finished all lower keys, so the messages cannot wait on each other in a cycle.
class MpiBootstrap : public gpu::Bootstrap {
public:
    ncclUniqueId id(std::uint32_t key, const std::vector<std::uint32_t>& members, std::uint32_t me) const override {
        if (key > kMaxTag) throw std::runtime_error("more communicators than MPI tags (" + std::to_string(key) + ")");
        const int tag = static_cast<int>(key);
        ncclUniqueId id{};
        if (members.at(0) == me) {
            CUBOID_NCCL(ncclGetUniqueId(&id));
            for (std::size_t i = 1; i < members.size(); ++i)
                CUBOID_MPI(MPI_Send(&id, sizeof id, MPI_BYTE, static_cast<int>(members[i]), tag, MPI_COMM_WORLD));
        } else {
            CUBOID_MPI(MPI_Recv(&id, sizeof id, MPI_BYTE, static_cast<int>(members[0]), tag, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE));
        }
        return id;
    }
};

struct Place {
    int rank = 0, size = 1, local_rank = 0;
};

Place place() {
    Place p;
    CUBOID_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &p.rank));
    CUBOID_MPI(MPI_Comm_size(MPI_COMM_WORLD, &p.size));
    MPI_Comm local = MPI_COMM_NULL;  // the processes of this node
    CUBOID_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p.rank, MPI_INFO_NULL, &local));
    CUBOID_MPI(MPI_Comm_rank(local, &p.local_rank));
    MPI_Comm_free(&local);
    return p;
}

// Stops the whole job: mpirun ends every rank and exits non-zero. One write, so that the ranks'
// messages do not interleave mid-line.
[[noreturn]] void abort_job(int rank, const std::string& what, int code) {
    std::cerr << ("cuboid-validate: rank " + std::to_string(rank) + ": " + what + "\n") << std::flush;
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);  // MPI_Abort does not return; this is for the compiler
}

// The GPU of this process, or NoGpuError saying why there is none (abort_job adds the rank).
int local_device(const Place& p) {
    int count = 0;
    const cudaError_t s = cudaGetDeviceCount(&count);
    if (s != cudaSuccess || count == 0)
        throw NoGpuError(std::string("no GPU (") + (s != cudaSuccess ? cudaGetErrorString(s) : "no CUDA device visible") +
                         ")");
    if (p.local_rank >= count)
        throw NoGpuError("no GPU for this process: it is process " + std::to_string(p.local_rank) +
                         " of its node, which has " + std::to_string(count) +
                         " GPUs: start one process per GPU (mpirun -npernode <GPUs>)");
    return p.local_rank;
}

// Every rank's measurement, on rank 0 (empty elsewhere), as JSON text.
std::vector<RankMeasurement> gather(const RankMeasurement& mine, const Place& p) {
    const std::string text = to_json(mine).dump();
    const int length = static_cast<int>(text.size());
    std::vector<int> lengths(static_cast<std::size_t>(p.size)), offsets(lengths.size(), 0);
    CUBOID_MPI(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
    for (std::size_t i = 1; i < lengths.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
    std::string all(p.rank == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0, '\0');
    CUBOID_MPI(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                           MPI_COMM_WORLD));
    std::vector<RankMeasurement> ranks;
    if (p.rank == 0)
        for (std::size_t i = 0; i < lengths.size(); ++i)
            ranks.push_back(rank_measurement_from_json(nlohmann::json::parse(
                all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])))));
    return ranks;
}

// Runs this process's rank; any failure stops the job with the rank in the message.
std::optional<Figures> run_rank_job(const sim::Program& program, const ExecutionPlan& plan,
                                    const ExecutorOptions& options, const Place& p) {
    const auto ranks = static_cast<int>(program.ranks.size());
    if (p.size != ranks) {  // a usage error: said once, by rank 0
        if (p.rank == 0)
            std::cerr << "cuboid-validate: the program has " << ranks << " ranks and mpirun started " << p.size
                      << " processes: use mpirun -np " << ranks << "\n" << std::flush;
        MPI_Abort(MPI_COMM_WORLD, 2);
        std::exit(2);
    }
    try {
        const int device = local_device(p);
        const MpiBootstrap boot;
        const RankMeasurement m = gpu::run_rank(program, plan, static_cast<std::uint32_t>(p.rank), device, boot, options);
        const std::vector<RankMeasurement> all = gather(m, p);
        if (p.rank != 0) return std::nullopt;
        return aggregate(program, all);
    } catch (const NoGpuError& e) {
        abort_job(p.rank, e.what(), 1);
    } catch (const std::exception& e) {
        abort_job(p.rank, e.what(), 3);
    }
}

}  // namespace

bool mpi_executor_available() { return true; }

std::optional<Figures> run_under_mpi(const sim::Program& program, const ExecutionPlan& plan,
                                     const ExecutorOptions& options) {
    CUBOID_MPI(MPI_Init(nullptr, nullptr));
    const Place p = place();
    std::optional<Figures> figures = run_rank_job(program, plan, options, p);
    MPI_Finalize();
    return figures;
}

}  // namespace cuboid::validate
