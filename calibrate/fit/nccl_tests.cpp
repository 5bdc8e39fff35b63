#include "calibrate/fit/nccl_tests.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hardware_models/collectives.hpp"
#include "hardware_models/input_file.hpp"
#include "hardware_models/physical_limits.hpp"

namespace cuboid::calibrate {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& message) {
    throw std::runtime_error(source + ": " + message);
}

std::vector<std::string> split(const std::string& line, char sep) {
    std::vector<std::string> out;
    std::stringstream s(line);
    std::string field;
    if (sep == ' ') {
        while (s >> field) out.push_back(field);
    } else {
        while (std::getline(s, field, sep)) out.push_back(field);
    }
    return out;
}

std::optional<double> number(const std::string& s) {
    try {
        std::size_t used = 0;
        const double v = std::stod(s, &used);
        if (used == s.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

// nccl-tests' program names (all_reduce_perf) and the same words in file names (allreduce_8gpu)
// to the profile's collective names. `squeezed` is lower case without '_' and '-'.
std::optional<std::string> kind_in(const std::string& text) {
    std::string squeezed;
    for (unsigned char c : text)
        if (c != '_' && c != '-') squeezed += char(std::tolower(c));
    const std::pair<const char*, const char*> names[] = {
        {"allreduce", "all-reduce"}, {"allgather", "all-gather"}, {"reducescatter", "reduce-scatter"},
        {"alltoall", "all-to-all"},  {"broadcast", "broadcast"},  {"sendrecv", "send-recv"}};
    for (const auto& [word, kind] : names)
        if (squeezed.find(word) != std::string::npos) return std::string(kind);
    return std::nullopt;
}

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

void add_point(NcclTestsRun& run, double bytes, const std::string& type, double seconds) {
    // nccl-tests prints size-0 rows for tiny counts; a size below one byte is no measurement either
    // (a profile's sizes are whole bytes, at least 1: a fuzz finding wrote 0.5 as 0).
    if (bytes < 1.0 || seconds <= 0.0) return;
    if (bytes > 1e15) fail(run.source, "a message size above 1e15 bytes is not an nccl-tests measurement");
    // nccl-tests prints sizes in whole bytes, and a profile's table holds whole bytes: a fraction
    // would be written rounded, next to a row of that size (a fuzz finding: 1.48576 beside 1).
    if (bytes != std::floor(bytes))
        fail(run.source, "message size " + std::to_string(bytes) + " is not a whole number of bytes");
    if (run.data_type.empty()) run.data_type = type;
    run.points.push_back({"", 0, bytes, seconds, 0, "auto"});
}

// The bus bandwidth is derived from the time again, but a measured row whose own is not a
// positive number (nan, inf: a failed measurement) cannot be trusted. (Size-0 rows print 0.)
void check_bus_bandwidth(const NcclTestsRun& run, int number_of_line, const std::string& busbw, const std::string& line) {
    const auto value = number(busbw);
    if (!value || *value <= 0.0)
        fail(run.source, "line " + std::to_string(number_of_line) + ": the bus bandwidth must be a number > 0, got '" +
                             busbw + "': " + line);
}

// nccl-tests' text output (see the header): rows, the rank lines' hosts and the program's name.
void parse_text(const std::string& text, NcclTestsRun& run, int& rank_lines, std::string& program) {
    static const std::regex rank_line(R"(^#\s*Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+))");
    static const std::regex perf_name(R"(([A-Za-z_]+_perf))");
    std::set<std::string> hosts;
    std::istringstream in(text);
    std::string line;
    for (int number_of_line = 1; std::getline(in, line); ++number_of_line) {
        std::smatch m;
        if (program.empty() && std::regex_search(line, m, perf_name)) program = m[1];
        if (line.empty()) continue;
        if (line[0] == '#') {
            if (std::regex_search(line, m, rank_line)) {
                ++rank_lines;
                if (hosts.insert(m[1]).second) run.hosts.push_back(m[1]);
            } else if (run.header.empty() && line.find("nThread") != std::string::npos) {
                run.header = line.substr(line.find_first_not_of("# "));
            }
            continue;
        }
        const auto f = split(line, ' ');
        if (f.empty()) continue;
        const auto size = number(f[0]);
        const auto time_us = f.size() >= 11 ? number(f[f.size() - 8]) : std::nullopt;
        if (!size || !time_us)
            fail(run.source, "line " + std::to_string(number_of_line) +
                                 ": not an nccl-tests row (size count type [redop root] then out-of-place "
                                 "time algbw busbw #wrong, in-place time algbw busbw #wrong)");
        if (*size > 0.0 && *time_us > 0.0) check_bus_bandwidth(run, number_of_line, f[f.size() - 6], line);
        add_point(run, *size, f[2], *time_us * 1e-6);
    }
}

// The CSV form: "size(B),count,type,time(ns),busbw(GB/s),...".
void parse_csv(const std::string& text, NcclTestsRun& run) {
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    const auto header = split(line, ',');
    int size_col = -1, time_col = -1, type_col = -1, busbw_col = -1;
    double time_unit = 0.0;
    for (int i = 0; i < int(header.size()); ++i) {
        const std::string& h = header[i];
        if (size_col < 0 && h.rfind("size", 0) == 0) size_col = i;
        if (type_col < 0 && h == "type") type_col = i;
        if (busbw_col < 0 && h.rfind("busbw", 0) == 0) busbw_col = i;
        if (time_col < 0 && h.rfind("time", 0) == 0) {
            time_col = i;
            time_unit = h.find("(ns)") != std::string::npos ? 1e-9 : h.find("(us)") != std::string::npos ? 1e-6 : 0.0;
        }
    }
    if (size_col < 0 || time_col < 0 || time_unit == 0.0)
        fail(run.source, "CSV header needs a size(B) column and a time(ns) or time(us) column: " + line);
    for (int number_of_line = 2; std::getline(in, line); ++number_of_line) {
        if (line.empty()) continue;
        const auto f = split(line, ',');
        const auto size = int(f.size()) > size_col ? number(f[size_col]) : std::nullopt;
        const auto time = int(f.size()) > time_col ? number(f[time_col]) : std::nullopt;
        if (!size || !time) fail(run.source, "line " + std::to_string(number_of_line) + ": expected numbers: " + line);
        const double bytes = size.value_or(0.0), seconds = time.value_or(0.0) * time_unit;
        if (busbw_col >= 0 && bytes > 0.0 && seconds > 0.0)
            check_bus_bandwidth(run, number_of_line, int(f.size()) > busbw_col ? f[busbw_col] : "", line);
        add_point(run, bytes, type_col >= 0 && int(f.size()) > type_col ? f[type_col] : "", seconds);
    }
}

bool looks_like_csv(const std::string& text) {
    const std::string first = text.substr(0, text.find('\n'));
    return first.find(',') != std::string::npos && first.rfind("size", 0) == 0;
}

std::optional<int> ranks_in_name(const std::string& source) {
    static const std::regex gpus(R"((\d+)[_-]?gpus?)", std::regex::icase);
    std::smatch m;
    const std::string name = base_name(source);
    if (std::regex_search(name, m, gpus)) return std::stoi(m[1]);
    return std::nullopt;
}

}  // namespace

NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& source, const NcclTestsHints& hints) {
    NcclTestsRun run;
    run.source = source;
    int rank_lines = 0;
    std::string program;
    if (looks_like_csv(text)) parse_csv(text, run);
    else parse_text(text, run, rank_lines, program);
    if (run.points.size() < 2) fail(source, "fewer than two measured sizes");

    const auto kind = hints.kind ? hints.kind : program.empty() ? kind_in(base_name(source)) : kind_in(program);
    if (!kind) fail(source, "which collective? name it with --kind (all-reduce, all-gather, ...)");
    run.kind = *kind;
    const auto ranks = hints.ranks ? hints.ranks : rank_lines > 0 ? std::optional<int>(rank_lines) : ranks_in_name(source);
    if (!ranks || *ranks < 2)
        fail(source, "how many ranks? the file has no '# Rank' lines and its name no '<N>gpu': give --ranks");
    run.ranks = *ranks;
    run.nodes = run.hosts.empty() ? hints.nodes : int(run.hosts.size());
    for (auto& p : run.points) p.kind = run.kind, p.ranks = run.ranks, p.nodes = run.nodes;
    std::sort(run.points.begin(), run.points.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    return run;
}

NcclTestsRun read_nccl_tests(const std::string& path, const NcclTestsHints& hints) {
    return parse_nccl_tests(read_input_file(path, kMaxTableFileBytes, "nccl-tests result file"), path, hints);
}

std::vector<hw::BusBandwidthPoint> bus_bandwidth_table(const NcclTestsRun& run) {
    return calibrate::bus_bandwidth_table(run.points);
}

namespace {

// A fit of times that barely grow with size gives a bandwidth no network has (a profile would
// refuse it when loaded): refused here, naming the file, before any profile is written.
void check_physical(const hw::CollectiveSample& s, const std::string& source) {
    namespace limits = hw::limits;
    auto bandwidth_ok = [](double gb_per_s) {
        return gb_per_s >= limits::kMinBusGigabytesPerSecond && gb_per_s <= limits::kMaxGigabytesPerSecond;
    };
    const double alpha_us = to_seconds(s.alpha) * 1e6;
    if (!bandwidth_ok(s.bus_gb_per_s) || !(alpha_us >= 0.0 && alpha_us <= limits::kMaxLatencyMicroseconds))
        throw std::runtime_error(source + ": the times fit a bus bandwidth of " + std::to_string(s.bus_gb_per_s) +
                                 " GB/s and a latency of " + std::to_string(alpha_us) +
                                 " us, outside 1e-6 to 1.25e5 GB/s (1 Pbit/s) and 0 to 1e6 us: not a measurement");
    for (const auto& p : s.table)
        if (!bandwidth_ok(p.bus_gb_per_s))
            throw std::runtime_error(source + ": a bus bandwidth of " + std::to_string(p.bus_gb_per_s) +
                                     " GB/s at " + std::to_string(p.bytes) + " bytes is outside 1e-6 to 1.25e5 GB/s");
}

}  // namespace

FittedProfile import_nccl_tests(const std::vector<NcclTestsRun>& runs, const std::map<std::string, std::string>& metadata) {
    FittedProfile f;
    f.profile.metadata = metadata;
    std::set<std::tuple<std::string, int, int>> seen;
    for (const auto& run : runs) {
        if (!seen.insert({run.kind, run.ranks, run.nodes}).second)
            throw std::runtime_error(run.source + ": a second " + run.kind + " on " + std::to_string(run.ranks) +
                                     " ranks over " + std::to_string(run.nodes) + " node(s)");
        const auto table = bus_bandwidth_table(run);
        const double factor = hw::bus_factor(collective_kind(run.kind), run.ranks);
        std::vector<TransferSample> samples;
        for (const auto& p : table) samples.push_back({factor * p.bytes, factor * p.bytes / (p.bus_gb_per_s * 1e9)});
        CollectiveFit c;
        c.fit = fit_alpha_beta(samples);
        c.sample.kind = collective_kind(run.kind);
        c.sample.ranks = run.ranks;
        c.sample.nodes = run.nodes;
        c.sample.alpha = c.fit.alpha;
        c.sample.bus_gb_per_s = c.fit.beta.value / 1e9;
        c.sample.table = table;
        check_physical(c.sample, run.source);
        f.collectives.push_back(c);
        f.profile.collectives.push_back(c.sample);
        f.raw.notes.push_back(run.source + ": " + std::to_string(run.points.size()) + " sizes read, " +
                              std::to_string(table.size()) + " in the table (median bus bandwidth per half octave)");
    }
    return f;
}

}  // namespace cuboid::calibrate
