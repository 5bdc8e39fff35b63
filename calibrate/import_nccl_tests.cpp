// cuboid-import-nccl-tests: writes a hardware profile (docs/hardware_profile.md) with the
// collective samples of nccl-tests results, one per file: an alpha-beta fit and the measured bus
// bandwidth per size. Needs no GPU: the measurements were made elsewhere (docs/calibrate.md).
#include <boost/program_options.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "calibrate/fit/nccl_tests.hpp"
#include "calibrate/fit/profile_writer.hpp"
#include "hardware_models/catalog.hpp"
#include "sim/output_file.hpp"

namespace po = boost::program_options;
using namespace cuboid::calibrate;

namespace {

struct Options {
    std::vector<std::string> files;
    std::string gpu;
    std::string out;
    std::string kind;
    int ranks = 0;
    int nodes = 1;
    std::string command;
};

std::map<std::string, std::string> metadata(const Options& o, const std::string& gpu, const std::vector<NcclTestsRun>& runs) {
    std::string sources, types;
    for (const auto& r : runs) {
        sources += (sources.empty() ? "" : " ") + r.source;
        if (types.find(r.data_type) == std::string::npos) types += (types.empty() ? "" : " ") + r.data_type;
    }
    std::map<std::string, std::string> m = {{"gpu", gpu},
                                            {"tool", "cuboid-import-nccl-tests"},
                                            {"command", o.command},
                                            {"source", sources},
                                            {"data_type", types},
                                            {"time", "nccl-tests out-of-place time"}};
    if (!runs.front().header.empty()) m["nccl_tests"] = runs.front().header;
    if (!runs.front().hosts.empty()) m["host"] = runs.front().hosts.front();
    return m;
}

int run(const Options& o) {
    // The simulator checks metadata.gpu against cluster.gpu; an unknown name would only fail there.
    const auto catalog = cuboid::hw::Catalog::load_builtin();
    std::string gpu;  // the catalog's own name, also when --gpu gave an alias
    try {
        gpu = catalog.gpu(o.gpu).name;
    } catch (const std::exception&) {
        std::string known;
        for (const auto& name : catalog.gpu_names()) known += " " + name;
        throw std::runtime_error("--gpu: unknown GPU '" + o.gpu + "' (catalog names:" + known + ")");
    }
    NcclTestsHints hints;
    if (!o.kind.empty()) hints.kind = o.kind;
    if (o.ranks > 0) hints.ranks = o.ranks;
    hints.nodes = o.nodes;
    std::vector<NcclTestsRun> runs;
    for (const auto& f : o.files) runs.push_back(read_nccl_tests(f, hints));
    const FittedProfile profile = import_nccl_tests(runs, metadata(o, gpu, runs));
    const std::string text = "# Hardware profile from nccl-tests results (docs/calibrate.md). Regenerate with:\n#   " +
                             o.command + "\n" + profile_yaml(profile);
    cuboid::sim::write_output_file(o.out, text);
    for (const auto& c : profile.collectives)
        std::cerr << cuboid::hw::collective_kind_name(c.sample.kind) << ", " << c.sample.ranks << " ranks on "
                  << c.sample.nodes << " node(s): alpha " << cuboid::to_seconds(c.sample.alpha) * 1e6 << " us, "
                  << c.sample.bus_gb_per_s << " GB/s, " << c.sample.table.size()
                  << " table points; alpha-beta worst error " << 100.0 * c.fit.max_relative_error << " %\n";
    std::cerr << "wrote " << o.out << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    // The program by its name, not the build folder it was run from, so the header reads the same
    // wherever the file is regenerated.
    o.command = "cuboid-import-nccl-tests";
    for (int i = 1; i < argc; ++i) {
        o.command += ' ';
        o.command += argv[i];
    }
    po::options_description desc("cuboid-import-nccl-tests FILE... --gpu NAME --out PROFILE.yaml");
    desc.add_options()("help,h", "this text")("gpu", po::value(&o.gpu)->required(), "catalog GPU name (cuboid list gpus)")(
        "out,o", po::value(&o.out)->required(), "profile file to write")(
        "nodes", po::value(&o.nodes)->default_value(1), "nodes the measured groups spanned (CSV files; text output names its hosts)")(
        "ranks", po::value(&o.ranks), "ranks of every file (default: the '# Rank' lines, else '<N>gpu' in the file name)")(
        "kind", po::value(&o.kind), "collective (default: from the program name in the file, else the file name)");
    po::options_description hidden;
    hidden.add_options()("files", po::value(&o.files));
    po::options_description all;
    all.add(desc).add(hidden);
    po::positional_options_description positional;
    positional.add("files", -1);
    try {
        po::variables_map vm;
        po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
        if (o.files.empty()) throw std::runtime_error("no nccl-tests result files given");
        // A collective spans at least two ranks on at least one node; 0 or a negative count is a typo.
        if (vm.count("ranks") && o.ranks < 2)
            throw std::runtime_error("--ranks: expected an integer >= 2, got " + std::to_string(o.ranks));
        if (o.nodes < 1) throw std::runtime_error("--nodes: expected an integer >= 1, got " + std::to_string(o.nodes));
        return run(o);
    } catch (const cuboid::sim::OutputError& e) {
        std::cerr << "cuboid-import-nccl-tests: " << e.what() << "\n";
        return 4;
    } catch (const std::exception& e) {
        std::cerr << "cuboid-import-nccl-tests: " << e.what() << "\n";
        return 2;
    }
}
