// cuboid-paper-check: the published strategies against the effects their papers report.
//
//   cuboid-paper-check [--only merak|tensor3d|atp] [--csv FILE] [--scenarios DIR] [--progress]
//
// For every check (validate/papers/paper_checks.cpp) it runs the baseline and the strategy
// scenario and prints: check, setup, baseline and strategy iteration times, cuboid's speed-up,
// the paper's speed-up or band, and whether cuboid's is in the band (or, for direction-only
// checks, faster). A row whose strategy cannot run yet prints "not available: <why>". ATP rows
// also print the mesh cuboid's reconstruction of ATP's cost model chooses for the interconnect.
// Exit status 0 whatever the verdicts (they are checks to read, not gates); 2 on a usage error;
// 4 when the --csv file cannot be written.
#include <boost/program_options.hpp>
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/output_file.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "validate/papers/paper_checks.hpp"

namespace po = boost::program_options;
using namespace cuboid::validate;

namespace {

std::string seconds(const std::optional<double>& s) { return s ? fmt::format("{:.3f}", *s) : "-"; }

void print_table(const std::vector<PaperResult>& rows) {
    fmt::print("{:<30} {:<44} {:>10} {:>10} {:>8}  {:<28} {}\n", "check", "setup", "baseline_s", "strategy_s",
               "speedup", "paper", "verdict");
    for (const PaperResult& r : rows) {
        const auto s = r.speedup();
        fmt::print("{:<30} {:<44} {:>10} {:>10} {:>8}  {:<28} {}\n", r.check.name, r.setup, seconds(r.baseline_s),
                   seconds(r.strategy_s), s ? fmt::format("{:.2f}x", *s) : "-", r.check.paper, r.verdict());
    }
    bool header = false;
    for (const PaperResult& r : rows) {
        if (r.note.empty()) continue;
        if (!header) fmt::print("\nATP mesh chosen per interconnect (hierarchical communication matrix):\n");
        header = true;
        fmt::print("  {}: {}\n", r.setup, r.note);
    }
}

// A CSV field in double quotes, inner quotes doubled (appended piece by piece: GCC 12 warns
// falsely on chained string concatenation).
std::string quoted(const std::string& s) {
    std::string out(1, '"');
    for (char c : s) {
        if (c == '"') out.push_back('"');
        out.push_back(c);
    }
    out.push_back('"');
    return out;
}

void write_csv(const std::string& path, const std::vector<PaperResult>& rows) {
    std::ostringstream out;
    out << "family,check,setup,baseline_s,strategy_s,speedup,paper,band_lo,band_hi,verdict,note\n";
    for (const PaperResult& r : rows) {
        const auto s = r.speedup();
        out << r.check.family << ',' << quoted(r.check.name) << ',' << quoted(r.setup) << ','
            << (r.baseline_s ? fmt::format("{}", *r.baseline_s) : "") << ','
            << (r.strategy_s ? fmt::format("{}", *r.strategy_s) : "") << ',' << (s ? fmt::format("{}", *s) : "")
            << ',' << quoted(r.check.paper) << ',' << r.check.band_lo << ',' << r.check.band_hi << ','
            << quoted(r.verdict()) << ',' << quoted(r.note) << '\n';
    }
    cuboid::sim::write_output_file(path, out.str());
}

}  // namespace

int main(int argc, char** argv) {
    std::string only, csv, scenario_dir = "scenarios/papers";
    bool progress = false;
    po::options_description desc("cuboid-paper-check options");
    desc.add_options()("help,h", "this help")("only", po::value(&only), "merak | tensor3d | atp")(
        "csv", po::value(&csv), "also write every row to this CSV file")(
        "scenarios", po::value(&scenario_dir)->default_value(scenario_dir), "folder of the papers' scenarios")(
        "progress", po::bool_switch(&progress), "one line per check on standard error");
    try {
        po::variables_map vm;
        po::store(po::parse_command_line(argc, argv, desc), vm);
        po::notify(vm);
        if (vm.count("help")) { std::cout << desc; return 0; }
        if (!only.empty() && only != "merak" && only != "tensor3d" && only != "atp")
            throw std::runtime_error("--only: expected merak, tensor3d or atp, got '" + only + "'");
        const auto names = cuboid::cli::builtin_name_resolvers();
        const auto checks = paper_checks(scenario_dir, only);
        std::vector<PaperResult> rows;
        for (std::size_t i = 0; i < checks.size(); ++i) {
            if (progress) fmt::print(stderr, "[{}/{}] {} {}\n", i + 1, checks.size(), checks[i].name, checks[i].scenario);
            rows.push_back(run_paper_check(checks[i], names));
        }
        print_table(rows);
        if (!csv.empty()) write_csv(csv, rows);
        return 0;
    } catch (const cuboid::sim::OutputError& e) {
        std::cerr << "cuboid-paper-check: " << e.what() << "\n";
        return 4;
    } catch (const std::exception& e) {
        std::cerr << "cuboid-paper-check: " << e.what() << "\n";
        return 2;
    }
}
