// cuboid-calibrate: measures this node's GPUs (GEMMs, memory-bound kernels, launch overhead,
// host copies, NCCL collectives), fits the models of docs/hardware_profile.md and writes a
// profile the simulator loads with `cluster.profile`. See docs/calibrate.md.
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <string>
#include <unistd.h>

#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/fit/gpu_names.hpp"
#include "calibrate/fit/passes.hpp"
#include "calibrate/fit/profile_writer.hpp"
#include "sim/output_file.hpp"

namespace po = boost::program_options;
using namespace cuboid::calibrate;

namespace {

struct Options {
    bool dry_run = false;
    bool quick = false;
    int gpus = 8;
    int nodes = 1;
    std::string out;
    std::string skip;  // comma-separated passes to leave out
    std::string command;
};

std::string today() {
    const std::time_t t = std::time(nullptr);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::localtime(&t));
    return buf;
}

std::string host_name() {
    char buf[256] = {};
    return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

// The device name as a file-name part: lower case, runs of other characters as '-'.
std::string slug(const std::string& s) {
    std::string out;
    for (unsigned char c : s)
        if (std::isalnum(c)) out += char(std::tolower(c));
        else if (!out.empty() && out.back() != '-') out += '-';
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

bool skipped(const Options& o, const std::string& pass) {
    return ("," + o.skip + ",").find("," + pass + ",") != std::string::npos;
}

std::map<std::string, std::string> metadata(const DeviceInfo& d, const Options& o) {
    std::map<std::string, std::string> m = {
        {"device", d.name}, {"sm_count", std::to_string(d.sm_count)},
        {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
        {"memory_gib", std::to_string(d.memory_bytes / 1073741824.0)}, {"gpus_in_node", std::to_string(d.device_count)},
        {"driver", d.driver}, {"cuda", d.cuda_runtime}, {"cublas", d.cublas}, {"host", host_name()},
        {"date", today()}, {"command", o.command}, {"tool", "cuboid-calibrate"}};
    if (!d.nccl.empty()) m["nccl"] = d.nccl;
    if (auto name = catalog_gpu_name(d.name, d.memory_bytes)) m["gpu"] = *name;
    return m;
}

// The single-GPU passes (launch, GEMMs, memory-bound kernels, host copies) on `device`, run
// plan.passes times; each point keeps the median of its passes (calibrate/fit/passes.hpp).
void measure_device(const Options& o, int device, const Plan& plan, Measurements& m) {
    std::vector<Measurements> passes(std::size_t(plan.passes), m);
    for (std::size_t i = 0; i < passes.size(); ++i) {
        Measurements& pass = passes[i];
        auto step = [&](const char* name, auto&& run) {
            if (skipped(o, name)) return pass.notes.push_back(std::string(name) + ": skipped (--skip)");
            std::cerr << "measuring " << name << " (pass " << i + 1 << " of " << passes.size() << ") ...\n";
            run();
        };
        step("launch", [&] { measure_launch(device, plan, pass); });
        step("gemm", [&] { measure_gemms(device, plan, pass); });
        step("memory", [&] { measure_memory_kernels(device, plan, pass); });
        step("copies", [&] { measure_host_copies(device, plan, pass); });
    }
    m = median_of_passes(passes);
}

void write_result(const Options& o, const Measurements& m, std::map<std::string, std::string> meta,
                  std::chrono::steady_clock::time_point t0) {
    const std::string out =
        o.out.empty() ? "profile-" + (meta.count("gpu") ? meta.at("gpu") : slug(m.device.name)) + "-" + today() + ".yaml"
                      : o.out;
    write_profile(fit_profile(m, meta), out);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "wrote " << out << " (" << long(secs) << " s of measurement)\n";
    for (const auto& n : m.notes) std::cerr << "note: " << n << "\n";
}

int no_gpu(const std::string& why) {
    std::cerr << "cuboid-calibrate: no GPU: no CUDA device available (" << why
              << "); nothing measured. Use --dry-run to see what a run measures.\n";
    return 1;
}

int calibrate(const Options& o) {
    std::string why;
    const int count = visible_devices(why);
    if (count == 0) return no_gpu(why);
    Measurements m;
    m.device = query_device(0, count);
    const bool fp8 = m.device.cc_major * 10 + m.device.cc_minor >= 89;
    const Plan plan = make_plan({o.quick, count, fp8, 1});
    std::cerr << "cuboid-calibrate: " << m.device.name << " x " << count << "\n" << describe(plan);
    const auto t0 = std::chrono::steady_clock::now();
    measure_device(o, 0, plan, m);
    if (skipped(o, "collectives")) m.notes.push_back("collectives: skipped (--skip)");
    else measure_collectives(plan, count, m);
    write_result(o, m, metadata(m.device, o), t0);
    return 0;
}

// Processes started by an MPI launcher (mpirun, or srun with PMI) see its variables.
int launcher_world_size() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return 1;
}

// One process per GPU under mpirun: world rank 0 (GPU 0 of the first node) measures the
// single-GPU passes, every process takes part in the collectives inside node 0 and across nodes,
// rank 0 writes the profile.
int calibrate_mpi(const Options& o, int* argc, char*** argv) {
#if CUBOID_HAVE_MPI && CUBOID_HAVE_NCCL
    const MpiPlace me = mpi_start(argc, argv);
    try {
        std::string why;
        const int count = visible_devices(why);
        if (count == 0) throw std::runtime_error("no GPU on rank " + std::to_string(me.rank) + ": " + why);
        if (me.local_rank >= count)
            throw std::runtime_error("rank " + std::to_string(me.rank) + " is process " + std::to_string(me.local_rank) +
                                     " of its node, which has " + std::to_string(count) +
                                     " GPUs: start one process per GPU (mpirun -npernode <GPUs>)");
        Measurements m;
        m.device = query_device(me.local_rank, count);
        const bool fp8 = m.device.cc_major * 10 + m.device.cc_minor >= 89;
        const Plan plan = make_plan({o.quick, me.gpus_per_node, fp8, me.nodes});
        const auto t0 = std::chrono::steady_clock::now();
        if (me.rank == 0) {
            std::cerr << "cuboid-calibrate: " << m.device.name << ", " << me.nodes << " nodes x " << me.gpus_per_node
                      << " GPUs (mpirun, " << me.size << " processes)\n" << describe(plan);
            measure_device(o, 0, plan, m);
        }
        mpi_barrier();
        if (skipped(o, "collectives")) m.notes.push_back("collectives: skipped (--skip)");
        else measure_collectives_mpi(plan, me, m);
        if (me.rank == 0) {
            auto meta = metadata(m.device, o);
            meta["nodes"] = std::to_string(me.nodes);
            meta["processes"] = std::to_string(me.size);
            write_result(o, m, meta, t0);
        }
    } catch (const std::exception& e) {
        // One write, so that the ranks' messages do not interleave mid-line.
        std::cerr << ("cuboid-calibrate: rank " + std::to_string(me.rank) + ": " + e.what() + "\n") << std::flush;
        mpi_abort(1);
    }
    mpi_finish();
    return 0;
#else
    (void)o, (void)argc, (void)argv;
    std::cerr << "cuboid-calibrate: started by an MPI launcher, but this build has no MPI"
              << (CUBOID_HAVE_NCCL ? "" : " and no NCCL")
              << " support: install libopenmpi-dev (Debian) and rebuild, or run it without mpirun on one node\n";
    return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 0; i < argc; ++i) {
        if (i > 0) o.command += ' ';
        o.command += argv[i];
    }
    po::options_description desc("cuboid-calibrate: measure this node's GPUs and write a hardware profile");
    desc.add_options()("help,h", "this text")("dry-run", po::bool_switch(&o.dry_run), "list what would be measured; touches no GPU")(
        "quick", po::bool_switch(&o.quick), "reduced grids (~1-2 minutes)")(
        "out", po::value(&o.out), "profile file (default profile-<gpu>-<date>.yaml)")(
        "gpus", po::value(&o.gpus)->default_value(8), "GPUs per node assumed by --dry-run")(
        "nodes", po::value(&o.nodes)->default_value(1), "nodes assumed by --dry-run (an mpirun across nodes)")(
        "skip", po::value(&o.skip), "passes to leave out, comma-separated: launch,gemm,memory,copies,collectives");
    try {
        po::variables_map vm;
        po::store(po::parse_command_line(argc, argv, desc), vm);
        po::notify(vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        if (o.dry_run) {
            std::cout << "cuboid-calibrate --dry-run (" << o.nodes << " node(s) x " << o.gpus << " GPUs assumed; fp8 only on compute capability >= 8.9)\n"
                      << describe(make_plan({o.quick, o.gpus, true, o.nodes}));
            return 0;
        }
        if (launcher_world_size() > 1) return calibrate_mpi(o, &argc, &argv);
        return calibrate(o);
    } catch (const cuboid::sim::OutputError& e) {
        std::cerr << "cuboid-calibrate: " << e.what() << "\n";
        return 4;
    } catch (const std::exception& e) {
        std::cerr << "cuboid-calibrate: " << e.what() << "\n";
        return 2;
    }
}
