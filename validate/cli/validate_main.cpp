#include "validate/cli/validate_main.hpp"

#include <filesystem>
#include <fstream>
#include <optional>

#include <boost/program_options.hpp>

#include "hardware_models/errors.hpp"
#include "sim/output_file.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/output_target.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/sweep_mpi.hpp"
#include "validate/cuda/gpu_executor.hpp"
#include "validate/plan/plan_summary.hpp"
#include "validate/report/comparison.hpp"
#include "validate/report/prediction.hpp"

namespace po = boost::program_options;

namespace cuboid::validate {
namespace {

struct Request {
    std::string scenario;
    std::optional<std::string> profile, csv, json, measured, write_measured;
    ExecutorOptions executor;
    bool dry_run = false;
    bool help = false;
};

po::options_description described(Request& r) {
    po::options_description d("cuboid-validate SCENARIO.yaml [options]");
    d.add_options()("help,h", po::bool_switch(&r.help), "this help")(
        "profile", po::value<std::string>(), "calibrated hardware profile (overrides cluster.profile)")(
        "iterations", po::value<int>(&r.executor.iterations)->default_value(20), "timed iterations (median)")(
        "warmup", po::value<int>(&r.executor.warmup)->default_value(3), "untimed iterations first")(
        "profiled", po::value<int>(&r.executor.profiled)->default_value(3), "iterations timed op by op")(
        "bootstrap-dir", po::value<std::string>(&r.executor.bootstrap_dir), "shared folder for NCCL ids")(
        "timeout", po::value<int>(&r.executor.timeout_s)->default_value(600),
        "seconds before unfinished ranks are killed (a hang): exit 3")(
        "csv", po::value<std::string>(), "write the comparison as CSV (- for standard output)")(
        "json", po::value<std::string>(), "write the comparison as JSON (- for standard output)")(
        "measured", po::value<std::string>(), "compare with this measured JSON instead of running")(
        "write-measured", po::value<std::string>(), "save what was measured as JSON")(
        "dry-run", po::bool_switch(&r.dry_run), "print the execution plan; no GPU used");
    return d;
}

std::optional<std::string> opt(const po::variables_map& vm, const char* key) {
    if (!vm.count(key)) return std::nullopt;
    return vm[key].as<std::string>();
}

Request parse(const std::vector<std::string>& args, std::ostream& out) {
    Request r;
    auto d = described(r);
    po::options_description hidden;
    hidden.add_options()("scenario", po::value<std::string>(&r.scenario));
    po::options_description all;
    all.add(d).add(hidden);
    po::positional_options_description pos;
    pos.add("scenario", 1);
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (r.help) {
        out << d << "\n";
        return r;
    }
    if (r.scenario.empty()) throw InputError({"", 0, "SCENARIO"}, "give a scenario file");
    if (r.executor.iterations < 1) throw InputError({"", 0, "--iterations"}, "must be at least 1");
    if (r.executor.timeout_s < 1) throw InputError({"", 0, "--timeout"}, "must be at least 1 second");
    r.profile = opt(vm, "profile");
    r.csv = opt(vm, "csv");
    r.json = opt(vm, "json");
    r.measured = opt(vm, "measured");
    r.write_measured = opt(vm, "write-measured");
    return r;
}

// Where --csv or --json goes: a file, or standard output for "-" (as `cuboid run --json -`); the
// table then goes to standard error, so that standard output stays machine-readable.
using Destination = cli::OutputTarget;

Scenario load(const Request& r) {
    Scenario s = cli::load_scenario_file(r.scenario, cli::builtin_name_resolvers());
    cli::check_complete(s);
    if (r.profile) s.cluster.profile = std::filesystem::absolute(*r.profile).string();
    return s;
}

// Under mpirun, a rank other than 0 only measures: rank 0 predicts, gathers and reports.
int run_worker_rank(const Request& r, const Scenario& s) {
    const sim::Program program = scenario_program(s);
    run_under_mpi(program, make_execution_plan(program), r.executor);
    return 0;
}

int report(const Scenario& s, const Prediction& p, const Figures& measured, std::ostream& out, std::ostream& err,
           Destination& csv, Destination& json) {
    const Comparison c = compare(p.figures, measured, p.tokens_per_iteration);
    std::ostream& table = csv.to_standard_output() || json.to_standard_output() ? err : out;
    table << "scenario " << s.name << ": " << p.result.gpus << " GPUs predicted on " << p.figures.device
          << ", measured on " << (measured.device.empty() ? "?" : measured.device) << " (" << measured.gpus
          << " GPUs)\n";
    write_text(table, c);
    if (csv.given()) {
        write_csv(csv.stream(), c);
        csv.commit();
    }
    if (json.given()) {
        json.stream() << comparison_json(c, s.name).dump(2) << "\n";
        json.commit();
    }
    return 0;
}

int run(const Request& r, std::ostream& out, std::ostream& err) {
    const bool under_mpi = cli::launcher_world_size() > 1;
    if (under_mpi && !mpi_executor_available()) {
        err << "cuboid-validate: started by an MPI launcher (" << cli::launcher_world_size()
            << " processes), but this build cannot run under MPI ("
            << (gpu_executor_available() ? "no MPI library" : "no CUDA executor")
            << " at configure time): install libopenmpi-dev (Debian) and rebuild, or run it without mpirun on one "
               "node\n";
        return 2;
    }
    if (under_mpi && cli::launcher_world_rank() != 0 && (r.dry_run || r.measured)) return 0;  // said by rank 0
    const Scenario s = load(r);
    if (r.dry_run) {
        const sim::Program program = scenario_program(s);
        write_plan_summary(out, program, make_execution_plan(program));
        return 0;
    }
    if (under_mpi && !r.measured && cli::launcher_world_rank() != 0) return run_worker_rank(r, s);
    if (r.csv && r.json && *r.csv == "-" && *r.json == "-")
        throw InputError({"", 0, "--json"}, "--csv and --json cannot both write to standard output ('-')");
    // Opened before the run: a bad path costs no measurement.
    Destination csv(r.csv, out), json(r.json, out);
    const Prediction p = predict(s);
    if (r.measured) return report(s, p, read_figures_file(*r.measured), out, err, csv, json);
    Figures measured;
    try {
        const ExecutionPlan plan = make_execution_plan(p.program);
        measured = under_mpi ? *run_under_mpi(p.program, plan, r.executor) : run_on_gpus(p.program, plan, r.executor);
    } catch (const NoGpuError& e) {
        err << "cuboid-validate: no GPU: " << e.what()
            << "\n(use --dry-run to see the execution plan, or --measured FILE to compare a saved run)\n";
        return 1;
    }
    if (r.write_measured) sim::write_output_file(*r.write_measured, to_json(measured).dump(2) + "\n");
    return report(s, p, measured, out, err, csv, json);
}

}  // namespace

int validate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    try {
        const Request r = parse(args, out);
        if (r.help) return 0;
        const int code = run(r, out, err);
        sim::finish_standard_output(out);
        return code;
    } catch (const sim::OutputError& e) {
        err << "cuboid-validate: error: " << e.what() << "\n";
        return 4;
    } catch (const InputError& e) {
        err << "cuboid-validate: error: " << e.what() << "\n";
        return 2;
    } catch (const po::error& e) {
        err << "cuboid-validate: error: " << e.what() << "\n";
        return 2;
    } catch (const std::runtime_error& e) {  // CUDA, cuBLAS or NCCL failed during a measurement
        err << "cuboid-validate: failed: " << e.what() << "\n";
        return 3;
    }
}

}  // namespace cuboid::validate
