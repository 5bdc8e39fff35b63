// `cuboid sweep` as separate processes: under `mpirun -np 2` the merged output equals the single
// process's byte for byte (less the measured sim.wall_s), a failing rank leaves a partial output
// and a non-zero exit, and SIGINT or SIGHUP stops a sweep with its rows so far written, marked
// partial.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/scratch_dir.hpp"

using nlohmann::json;

namespace {

struct Run {
    int code = -1;
    std::string err;
};

std::string slurp(const std::filesystem::path& p) {
    std::ifstream f(p);
    return {std::istreambuf_iterator<char>(f), {}};
}

Run shell(const std::string& command) {
    const auto err_path = cuboid::scratch::file("cuboid-sweep-process-" + std::to_string(getpid()) + ".err");
    const std::string full = command + " > /dev/null 2> '" + err_path.string() + "'";
    Run r;
    const int status = std::system(full.c_str());
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(err_path);
    return r;
}

std::string temp(const std::string& name) {
    // Per process: CTest runs this executable twice at once (the [signal] and [mpi] cases).
    return (cuboid::scratch::file("cuboid-sweep-process-" + std::to_string(getpid()) + "-" + name))
        .string();
}

// 16 points of 8-GPU plans of every status (tests/cli/sweep_command_test.cpp explains them).
std::string scenario() {
    const std::string path = temp("small.yaml");
    std::ofstream(path) << "name: small-sweep\nmodel:\n  preset: gpt-7.5b\ncluster:\n  gpu: a100-sxm-40gb\n"
                           "  nodes: 1\n  gpus_per_node: 8\ntraining:\n  global_batch: 16\nparallel:\n  tensor: 4\n"
                           "  pipeline: 2\n  recompute: full\nsweep:\n  parallel.tensor: [1, 2, 4, 8]\n"
                           "  parallel.pipeline: [1, 2]\n  training.micro_batch: [1, 4]\n";
    return path;
}

std::string sweep_args(const std::string& tag) {
    return "sweep '" + scenario() + "' --threads 1 --quiet --csv '" + temp(tag + ".csv") + "' --json '" +
           temp(tag + ".json") + "'";
}

// The CSV without its sim.wall_s column (the one measured time: it differs from run to run).
std::string csv_without_wall(const std::string& text) {
    std::istringstream in(text);
    std::ostringstream out;
    std::size_t drop = std::string::npos;
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> cells;
        std::stringstream s(line);
        for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
        if (drop == std::string::npos)
            for (std::size_t c = 0; c < cells.size(); ++c)
                if (cells[c] == "sim.wall_s") drop = c;
        for (std::size_t c = 0; c < cells.size(); ++c)
            if (c != drop) out << cells[c] << ';';
        out << '\n';
    }
    return out.str();
}

std::string json_without_wall(const std::string& text) {
    json rows = json::parse(text);
    for (auto& row : rows)
        if (row.contains("sim")) row["sim"].erase("wall_s");
    return rows.dump(2);
}

const std::string kMpirun = std::string(CUBOID_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 2 ";
const std::string kBinary = std::string("'") + CUBOID_BINARY + "' ";

}  // namespace

// A search of the same small model: its top plans from two ranks are one process's, bit for bit.
TEST_CASE("mpirun -np 2 cuboid search ranks the top plans one process ranks", "[.mpi][mpi]") {
    const std::string path = temp("search.yaml");
    std::ofstream(path) << "name: small-search\nmodel:\n  preset: gpt-7.5b\ncluster:\n  gpu: a100-sxm-40gb\n"
                           "  nodes: 2\n  gpus_per_node: 8\ntraining:\n  global_batch: 32\n";
    const auto args = [&](const std::string& tag) {
        return "search '" + path + "' --threads 1 --top 3 --quiet --json '" + temp(tag + ".json") + "'";
    };
    if (!CUBOID_MPI_BUILT) {
        const Run refused = shell(kMpirun + kBinary + args("nompi"));
        CHECK(refused.code != 0);
        CHECK(refused.err.find("built without MPI") != std::string::npos);
        return;
    }
    const Run one = shell(kBinary + args("search-one"));
    INFO(one.err);
    REQUIRE(one.code == 0);
    const Run two = shell(kMpirun + kBinary + args("search-two"));
    INFO(two.err);
    REQUIRE(two.code == 0);
    const json a = json::parse(slurp(temp("search-one.json"))), b = json::parse(slurp(temp("search-two.json")));
    const json& top_a = a.at("plans");
    const json& top_b = b.at("plans");
    REQUIRE(top_a.size() == 3);
    REQUIRE(top_b.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
        INFO("rank " << k + 1);
        CHECK(top_b[k].at("plan_text") == top_a[k].at("plan_text"));
        CHECK(top_b[k].at("iteration_time_s") == top_a[k].at("iteration_time_s"));  // the same double
    }
    // Every candidate is accounted for once across the ranks.
    for (const char* count : {"candidates", "invalid", "pruned_memory"})
        CHECK(b.at("search").at(count) == a.at("search").at(count));
    CHECK(b.at("search").at("ranks") == 2);
    CHECK(a.at("search").at("ranks") == 1);
}

// A study's pairs searched across two ranks: every row and winner is one process's.
TEST_CASE("mpirun -np 2 cuboid whatif writes the rows one process writes", "[.mpi][mpi]") {
    const std::string study = std::string(CUBOID_SOURCE_DIR) + "/tests/cli/data/html_study.yaml";
    const auto args = [&](const std::string& tag) {
        return "whatif '" + study + "' --threads 1 --quiet --json '" + temp(tag + ".json") + "'";
    };
    if (!CUBOID_MPI_BUILT) {
        const Run refused = shell(kMpirun + kBinary + args("whatif-nompi"));
        CHECK(refused.code != 0);
        CHECK(refused.err.find("built without MPI") != std::string::npos);
        return;
    }
    const Run one = shell(kBinary + args("whatif-one"));
    INFO(one.err);
    REQUIRE(one.code == 0);
    const Run two = shell(kMpirun + kBinary + args("whatif-two"));
    INFO(two.err);
    REQUIRE(two.code == 0);
    json a = json::parse(slurp(temp("whatif-one.json"))), b = json::parse(slurp(temp("whatif-two.json")));
    REQUIRE(a.at("rows").size() == 3);
    // The measured times and the search's own counts differ; the rows' plans and figures do not.
    for (json* doc : {&a, &b}) {
        doc->erase("wall_s");
        for (auto& row : doc->at("rows")) {
            row.erase("search");
            if (row.contains("sim")) row["sim"].erase("wall_s");
        }
    }
    CHECK(b.at("rows").dump() == a.at("rows").dump());
    CHECK(b.at("winners") == a.at("winners"));
    // A study that cannot be read: exit 2 from the ranks, the reason said once.
    const Run bad = shell(kMpirun + kBinary + "whatif /nonexistent/study.yaml --quiet");
    CHECK(bad.code == 2);
}

TEST_CASE("mpirun -np 2 cuboid sweep writes what one process writes", "[.mpi][mpi]") {
    if (!CUBOID_MPI_BUILT) {
        // Without MPI the program must refuse to run as N copies that would each write everything.
        const Run refused = shell(kMpirun + kBinary + sweep_args("nompi"));
        CHECK(refused.code != 0);
        CHECK(refused.err.find("built without MPI") != std::string::npos);
        return;
    }
    const Run one = shell(kBinary + sweep_args("one"));
    INFO(one.err);
    REQUIRE(one.code == 0);
    const Run two = shell(kMpirun + kBinary + sweep_args("two"));
    INFO(two.err);
    REQUIRE(two.code == 0);
    const std::string csv_one = slurp(temp("one.csv")), csv_two = slurp(temp("two.csv"));
    CHECK(std::count(csv_one.begin(), csv_one.end(), '\n') == 17);  // header + 16 points
    CHECK(csv_without_wall(csv_two) == csv_without_wall(csv_one));
    CHECK(json_without_wall(slurp(temp("two.json"))) == json_without_wall(slurp(temp("one.json"))));
}

TEST_CASE("a failing rank: its message, a non-zero exit, the gathered rows written partial", "[.mpi][mpi]") {
    if (!CUBOID_MPI_BUILT) return;  // the case above checked the refusal
    const Run r = shell("CUBOID_SWEEP_FAIL_RANK=1 " + kMpirun + kBinary + sweep_args("fail"));
    CHECK(r.code != 0);
    CHECK(r.err.find("rank 1 of 2 failed") != std::string::npos);
    // Rank 0 ran its 8 points (0, 2, ..., 14); rank 1 one point before it failed.
    const json j = json::parse(slurp(temp("fail.json")));
    CHECK(j.at("partial") == true);
    CHECK(j.at("points_done") == 9);
    CHECK(j.at("rows").size() == 9u);
    CHECK(slurp(temp("fail.csv")).rfind("# partial: 9 of 16 points done (rank 1 of 2 failed", 0) == 0);
}

namespace {

// 40 copies of one 8-GPU plan (only the name differs) with 1,024 micro-batches, so every point
// takes the same time (about 0.2 s on the 2-core development machine, the whole sweep about 8 s);
// a signal 0.5 s into the sweep finds points done and left. With points of 64 micro-batches the
// sweep came to end before the signal once the simulator got faster.
constexpr int kSignalPoints = 40;

std::string signal_scenario() {
    const std::string file = temp("signal.yaml");
    std::ofstream yaml(file);
    yaml << "name: x\nmodel:\n  preset: gpt-7.5b\ncluster:\n  gpu: a100-sxm-40gb\n  nodes: 1\n"
            "  gpus_per_node: 8\ntraining:\n  global_batch: 1024\nparallel:\n  tensor: 4\n"
            "  pipeline: 2\n  recompute: full\nsweep:\n  name: [";
    for (int i = 1; i <= kSignalPoints; ++i) yaml << (i > 1 ? ", " : "") << 'p' << i;
    yaml << "]\n";
    return file;
}

// Starts the sweep of signal_scenario() writing `tag`.csv and `tag`.json, sends it `signal` once
// it has installed its handler, and waits for it. The handler is seen in /proc (bit 2 of SigCgt,
// SIGINT): a fixed delay from the start would, on a loaded machine, hit a process still starting
// (default action, nothing written).
Run interrupted_sweep(const std::string& signal, const std::string& tag) {
    const std::string script = temp(tag + ".sh");
    std::ofstream(script) << kBinary << "sweep '" << signal_scenario() << "' --threads 1 --quiet --csv '"
                          << temp(tag + ".csv") << "' --json '" << temp(tag + ".json") << "' &\n"
                          << "pid=$!\n"
                          << "for i in $(seq 400); do\n"
                          << "  mask=$(awk '/^SigCgt/ {print $2}' /proc/$pid/status 2>/dev/null)\n"
                          << "  [ -n \"$mask\" ] && [ $(( 0x$mask & 2 )) -ne 0 ] && break\n"
                          << "  sleep 0.05\n"
                          << "done\n"
                          << "sleep 0.5\n"
                          << "kill -" << signal << " $pid\n"
                          << "wait $pid\n";
    return shell("sh '" + script + "'");
}

// The CSV of an interrupted sweep: its partial comment, the header, one row per point done.
void check_partial_csv(const std::string& tag, const std::string& signal) {
    const std::string text = slurp(temp(tag + ".csv"));
    INFO(text.substr(0, 200));
    REQUIRE(text.rfind("# partial: ", 0) == 0);
    const int done = std::stoi(text.substr(11));
    CHECK(done < kSignalPoints);
    CHECK(text.find(" of " + std::to_string(kSignalPoints) + " points done (interrupted by " + signal + ")") !=
          std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == done + 2);
    const json j = json::parse(slurp(temp(tag + ".json")));
    CHECK(j.at("partial") == true);
    CHECK(j.at("points_done") == done);
}

}  // namespace

TEST_CASE("SIGINT stops a sweep: the rows so far, marked partial, exit 130", "[signal]") {
    const Run r = interrupted_sweep("INT", "int");
    CHECK(r.code == 130);  // 128 + SIGINT (2)
    CHECK(r.err.find("interrupted by SIGINT") != std::string::npos);
    check_partial_csv("int", "SIGINT");
}

TEST_CASE("SIGHUP (the terminal closed) stops a sweep as SIGINT does, exit 129", "[signal]") {
    const Run r = interrupted_sweep("HUP", "hup");
    CHECK(r.code == 129);  // 128 + SIGHUP (1)
    CHECK(r.err.find("interrupted by SIGHUP") != std::string::npos);
    check_partial_csv("hup", "SIGHUP");
}

namespace {

// The children of `parent` (Linux: /proc/PID/task/PID/children); mpirun starts its local ranks
// itself.
std::vector<pid_t> children(pid_t parent) {
    const std::string tid = std::to_string(parent);
    std::ifstream list("/proc/" + tid + "/task/" + tid + "/children");
    std::vector<pid_t> pids;
    for (pid_t p = 0; list >> p;) pids.push_back(p);
    return pids;
}

// Whether `pid` has a handler for SIGTERM (bit 14 of SigCgt in /proc): the sweep has installed it.
bool catches_sigterm(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> 14) & 1U;
    return false;
}

// Starts `mpirun -np 2 cuboid sweep` of signal_scenario() as a direct child (no shell between:
// the signal goes to mpirun itself, and a shell's background job would start with SIGINT
// ignored), sends mpirun `signal` once both ranks handle SIGTERM and 0.5 s more, and waits for
// it (at most 30 s). Open MPI's defaults apply: mpirun sends the ranks SIGCONT, SIGTERM a
// second later and SIGKILL a second after that, so the ranks have about a second to write.
Run interrupted_mpi_sweep(int signal, const std::string& tag) {
    const std::string scenario_file = signal_scenario(), csv = temp(tag + ".csv"), json_file = temp(tag + ".json"),
                      err_file = temp(tag + ".err");
    std::filesystem::remove(csv);
    std::filesystem::remove(json_file);
    std::vector<std::string> args{CUBOID_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", "2",
                                  CUBOID_BINARY, "sweep", scenario_file, "--threads", "1", "--quiet", "--csv", csv,
                                  "--json", json_file};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t mpirun = fork();
    REQUIRE(mpirun >= 0);
    if (mpirun == 0) {
        std::freopen("/dev/null", "w", stdout);
        std::freopen(err_file.c_str(), "w", stderr);
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        execv(argv[0], argv.data());
        _exit(127);
    }
    const auto ranks_ready = [&] {
        const auto pids = children(mpirun);
        return std::count_if(pids.begin(), pids.end(), catches_sigterm) >= 2;
    };
    for (int i = 0; i < 600 && !ranks_ready(); ++i) usleep(50'000);
    usleep(500'000);
    kill(mpirun, signal);
    int status = 0;
    pid_t waited = 0;
    for (int i = 0; i < 600 && (waited = waitpid(mpirun, &status, WNOHANG)) == 0; ++i) usleep(50'000);
    if (waited == 0) {
        kill(mpirun, SIGKILL);
        waitpid(mpirun, &status, 0);
        FAIL("mpirun did not end within 30 s of the signal");
    }
    Run r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(err_file);
    return r;
}

}  // namespace

TEST_CASE("mpirun -np 2 stopped by SIGTERM or SIGINT: the rows so far written, marked partial", "[.mpi][mpi]") {
    if (!CUBOID_MPI_BUILT) return;  // the first [mpi] case checked the refusal
    for (const auto& [signal, tag] : {std::pair{SIGTERM, "mpiterm"}, std::pair{SIGINT, "mpiint"}}) {
        const Run r = interrupted_mpi_sweep(signal, tag);
        INFO("signal " << signal << "; standard error: " << r.err);
        CHECK(r.code != 0);
        // mpirun passes either signal on to the ranks as SIGTERM.
        CHECK(r.err.find("interrupted by SIGTERM") != std::string::npos);
        REQUIRE(std::filesystem::exists(temp(std::string(tag) + ".csv")));
        check_partial_csv(tag, "SIGTERM");
    }
}
