#include "strategies/cli/cli_main.hpp"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include "hardware_models/errors.hpp"
#include "sim/output_file.hpp"
#include "strategies/cli/list_command.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/search_command.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/cli/sweep_command.hpp"
#include "strategies/cli/whatif_command.hpp"

#include <cmath>
#include <iostream>
#include <optional>
#include <unistd.h>

#ifndef CUBOID_VERSION
#define CUBOID_VERSION "unknown"
#endif

namespace po = boost::program_options;

namespace cuboid::cli {
namespace {

// The usage text; `cuboid list`'s topics come from list_topics().
std::string usage() {
    return fmt::format(
    "usage: cuboid run SCENARIO.yaml [--set KEY=VALUE]... [--json FILE|-] [--trace FILE] [--no-fold] [--quiet]\n"
    "       cuboid sweep SCENARIO.yaml [--set KEY=VALUE]... [--threads N] [--csv FILE|-] [--json FILE|-] [--html FILE] [--top N] [--memory-headroom F] [--no-fold] [--quiet]\n"
    "       cuboid list {}\n"
    "       cuboid search SCENARIO.yaml [--set KEY=VALUE]... [--threads N] [--top N] [--max-gpus N] [--memory-headroom F] [--time-limit S] [--max-memory GIB] [--csv FILE|-] [--json FILE|-] [--html FILE] [--no-fold] [--quiet]\n"
    "       cuboid whatif STUDY.yaml [--threads N] [--time-limit S] [--max-memory GIB] [--csv FILE|-] [--json FILE|-] [--html FILE] [--rank-by time|rented-cost|owned-cost|energy] [--quiet]\n"
    "       cuboid --help | --version\n"
    "\n"
    "Simulates one training iteration of a transformer on a GPU cluster (scenario format:\n"
    "docs/scenario.md). Exit codes: 0 ok, 1 internal error, 2 bad input, 3 plan does not fit in\n"
    "GPU memory, 4 an output could not be written, 5 a limit stopped a search before any plan fit.\n",
    fmt::join(list_topics(), "|"));
}

po::options_description visible_options() {
    po::options_description o("options");
    o.add_options()                                                                                  //
        ("help,h", "print this help")                                                               //
        ("version", "print the version")                                                            //
        ("set", po::value<std::vector<std::string>>()->composing(),
         "KEY=VALUE: override one scenario key by its dotted path (repeatable)")                    //
        ("json", po::value<std::string>(), "write the JSON result to FILE, or '-' for stdout only")  //
        ("trace", po::value<std::string>(), "write a Perfetto / chrome://tracing timeline to FILE")  //
        ("print-schedule", "run: print each pipeline stage's compute order (F B R Fc W) before the report")  //
        ("csv", po::value<std::string>(), "sweep: write the rows as CSV to FILE, or '-' for stdout only")  //
        ("html", po::value<std::string>(),
         "sweep, search, whatif: write a self-contained HTML report (tables, charts) to FILE")  //
        ("threads", po::value<int>(), "sweep, search, whatif: points run at once (default: the hardware threads)")  //
        ("top", po::value<int>(), "sweep: the table shows only the N fastest points that fit; search: the N best plans (default 5)")  //
        ("max-gpus", po::value<int>(), "search: use at most N GPUs of the cluster (whole nodes)")     //
        ("memory-headroom", po::value<double>(),
         "sweep, search: the fraction F of GPU memory a plan must leave free to fit, 0 <= F < 1 (default 0)")  //
        ("fold", "run: simulate one rank per set of provably identical ranks (the default; kept for scripts)")  //
        ("no-fold", "run, sweep, search: simulate every rank (folding identical ranks, with the same results, is the default)")  //
        ("max-events", po::value<double>(),
         "run, sweep, search: refuse a plan estimated to take more simulator events (default 1e11)")  //
        ("max-memory", po::value<double>(),
         "run, sweep, search: refuse a plan estimated to need more GiB to simulate (default: physical memory); "
         "search, whatif: also stop once the process holds more GiB, writing what was found, marked partial")  //
        ("time-limit", po::value<double>(),
         "search, whatif: stop after S seconds, writing what was found, marked partial")  //
        ("rank-by", po::value<std::string>(),
         "whatif: order each model's clusters by time (default), rented-cost, owned-cost or energy")  //
        ("quiet,q", "no human-readable report (sweep, search, whatif: no table, no progress line)");
    return o;
}

struct Parsed {
    po::variables_map vm;
    std::string command;
    std::vector<std::string> operands;
};

Parsed parse(const std::vector<std::string>& args) {
    po::options_description hidden;
    hidden.add_options()("command", po::value<std::string>())("operands", po::value<std::vector<std::string>>());
    po::options_description all;
    all.add(visible_options()).add(hidden);
    po::positional_options_description positional;
    positional.add("command", 1).add("operands", -1);
    Parsed p;
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), p.vm);
    po::notify(p.vm);
    if (p.vm.count("command")) p.command = p.vm["command"].as<std::string>();
    if (p.vm.count("operands")) p.operands = p.vm["operands"].as<std::vector<std::string>>();
    return p;
}

[[noreturn]] void usage_error(const std::string& message) { throw po::error(message); }

std::string one_operand(const Parsed& p, const char* what) {
    if (p.operands.size() != 1)
        usage_error(fmt::format("'cuboid {}' takes exactly one {}, got {}", p.command, what, p.operands.size()));
    return p.operands.front();
}

// An option of another command is an error rather than silently ignored.
void reject_options(const Parsed& p, std::initializer_list<const char*> options) {
    for (const char* o : options)
        if (p.vm.count(o)) usage_error(fmt::format("'cuboid {}' does not take --{}", p.command, o));
}

// Copies option `name` into `field` when the command line gives it (the field keeps its default
// otherwise). An optional field takes the option's value type.
template <class T>
struct OptionValue {
    using type = T;
};
template <class T>
struct OptionValue<std::optional<T>> {
    using type = T;
};

template <class Field>
void take(const Parsed& p, const char* name, Field& field) {
    if (p.vm.count(name)) field = p.vm[name].as<typename OptionValue<Field>::type>();
}

// --max-events and --max-memory (GiB), which must be positive numbers.
WorkLimits work_limits(const Parsed& p) {
    WorkLimits limits;
    take(p, "max-events", limits.max_events);
    double gib = 0.0;
    take(p, "max-memory", gib);
    if (!(limits.max_events > 0.0) || !std::isfinite(limits.max_events))
        usage_error("--max-events must be a positive number of events");
    if (p.vm.count("max-memory") && (!(gib > 0.0) || !std::isfinite(gib)))
        usage_error("--max-memory must be a positive number of GiB");
    limits.max_memory_bytes = gib * double(1ULL << 30);
    return limits;
}

// Progress only where a person watches: the process's own standard error, on a terminal.
bool watched(const std::ostream& err) { return &err == &std::cerr && isatty(STDERR_FILENO); }

int run(const Parsed& p, std::ostream& out, std::ostream& err) {
    reject_options(p, {"csv", "html", "threads", "top", "max-gpus", "memory-headroom", "time-limit", "rank-by"});
    if (p.vm.count("fold") > 0 && p.vm.count("no-fold") > 0) usage_error("--fold and --no-fold contradict each other");
    RunRequest r;
    r.scenario_path = one_operand(p, "scenario file");
    take(p, "set", r.sets);
    take(p, "json", r.json);
    take(p, "trace", r.trace);
    r.quiet = p.vm.count("quiet") > 0;
    r.print_schedule = p.vm.count("print-schedule") > 0;
    r.progress = watched(err);
    // Folded runs were measured never slower than full ones, from 64 to 131,072 GPUs, with peak
    // memory within 1 % or below (bench/results/2026-11-29-local-settling-2core.txt), and give
    // the same results: the default.
    r.fold = p.vm.count("no-fold") == 0;
    r.limits = work_limits(p);
    return run_command(r, out, err);
}

int sweep(const Parsed& p, std::ostream& out, std::ostream& err) {
    reject_options(p, {"trace", "print-schedule", "max-gpus", "fold", "time-limit", "rank-by"});
    SweepRequest r;
    r.scenario_path = one_operand(p, "scenario file");
    take(p, "set", r.sets);
    take(p, "csv", r.csv);
    take(p, "json", r.json);
    take(p, "html", r.html);
    take(p, "threads", r.threads);
    take(p, "top", r.top);
    r.quiet = p.vm.count("quiet") > 0;
    r.progress = watched(err);
    r.fold = p.vm.count("no-fold") == 0;
    take(p, "memory-headroom", r.memory_headroom);
    r.limits = work_limits(p);
    return sweep_command(r, out, err);
}

int search(const Parsed& p, std::ostream& out, std::ostream& err) {
    reject_options(p, {"trace", "print-schedule", "fold", "rank-by"});
    SearchRequest r;
    r.scenario_path = one_operand(p, "scenario file");
    take(p, "set", r.sets);
    take(p, "csv", r.csv);
    take(p, "json", r.json);
    take(p, "html", r.html);
    take(p, "threads", r.threads);
    take(p, "top", r.top);
    take(p, "max-gpus", r.max_gpus);
    r.quiet = p.vm.count("quiet") > 0;
    r.fold = p.vm.count("no-fold") == 0;
    take(p, "memory-headroom", r.memory_headroom);
    take(p, "time-limit", r.time_limit_s);
    r.limits = work_limits(p);
    r.progress = watched(err);
    return search_command(r, out, err);
}

int whatif(const Parsed& p, std::ostream& out, std::ostream& err) {
    reject_options(p, {"trace", "print-schedule", "set", "top", "max-gpus", "fold", "no-fold", "max-events", "memory-headroom"});
    WhatifRequest r;
    r.study_path = one_operand(p, "study file");
    take(p, "time-limit", r.time_limit_s);
    if (p.vm.count("max-memory")) r.max_memory_bytes = work_limits(p).max_memory_bytes;
    r.progress = watched(err);
    take(p, "csv", r.csv);
    take(p, "json", r.json);
    take(p, "html", r.html);
    take(p, "threads", r.threads);
    take(p, "rank-by", r.rank_by);
    r.quiet = p.vm.count("quiet") > 0;
    return whatif_command(r, out, err);
}

int dispatch(const Parsed& p, std::ostream& out, std::ostream& err) {
    if (p.vm.count("help")) {
        out << usage() << "\n" << visible_options();
        return kExitOk;
    }
    if (p.vm.count("version")) {
        fmt::print(out, "cuboid {}\n", CUBOID_VERSION);
        return kExitOk;
    }
    if (p.command.empty()) usage_error("no command given");
    if (p.command == "run") return run(p, out, err);
    if (p.command == "list") {
        list_command(one_operand(p, "topic"), out);
        return kExitOk;
    }
    if (p.command == "sweep") return sweep(p, out, err);
    if (p.command == "search") return search(p, out, err);
    if (p.command == "whatif") return whatif(p, out, err);
    const std::vector<std::string> commands{"run", "list", "sweep", "search", "whatif"};
    usage_error(unknown_name_message("command", p.command, commands));
}

}  // namespace

int cuboid_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    try {
        const int code = dispatch(parse(args), out, err);
        sim::finish_standard_output(out);
        return code;
    } catch (const sim::OutputError& e) {
        fmt::print(err, "cuboid: error: {}\n", e.what());
        return kExitOutputFailed;
    } catch (const InputError& e) {
        fmt::print(err, "cuboid: error: {}\n", e.what());
        return kExitBadInput;
    } catch (const po::error& e) {
        fmt::print(err, "cuboid: error: {}\n{}", e.what(), usage());
        return kExitBadInput;
    } catch (const std::exception& e) {
        fmt::print(err, "cuboid: internal error (please report): {}\n", e.what());
        return kExitFailure;
    } catch (...) {
        fmt::print(err, "cuboid: internal error (please report): unknown exception\n");
        return kExitFailure;
    }
}

}  // namespace cuboid::cli
