#include "validate/report/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace cuboid::validate {
namespace {

void add(Comparison& c, std::string metric, std::string unit, double predicted, double measured) {
    c.rows.push_back({std::move(metric), std::move(unit), predicted, measured, relative_error(predicted, measured)});
}

void add_op_kinds(Comparison& c, const Figures& p, const Figures& m) {
    std::set<std::string> kinds;
    for (const auto& [k, s] : p.op_kind_seconds) kinds.insert(k);
    for (const auto& [k, s] : m.op_kind_seconds) kinds.insert(k);
    auto at = [](const std::map<std::string, double>& map, const std::string& k) {
        const auto it = map.find(k);
        return it == map.end() ? 0.0 : it->second;
    };
    for (const std::string& k : kinds) add(c, "time " + k, "s", at(p.op_kind_seconds, k), at(m.op_kind_seconds, k));
}

// Median |error| over the ops sampled in both.
void add_op_errors(Comparison& c, const Figures& p, const Figures& m) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, double> predicted;
    for (const OpSample& s : p.ops) predicted[{s.rank, s.op}] = s.seconds;
    std::vector<double> errors;
    for (const OpSample& s : m.ops) {
        const auto it = predicted.find({s.rank, s.op});
        if (it == predicted.end()) continue;
        if (const auto e = relative_error(it->second, s.seconds)) errors.push_back(std::abs(*e));
    }
    c.compared_ops = errors.size();
    if (errors.empty()) return;
    const auto mid = errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2);
    std::nth_element(errors.begin(), mid, errors.end());
    double median = *mid;
    if (errors.size() % 2 == 0) median = 0.5 * (median + *std::max_element(errors.begin(), mid));
    c.median_op_error = median;
}

const char* verdict_words(Verdict v) {
    switch (v) {
        case Verdict::Within5: return "within 5%";
        case Verdict::Within10: return "within 10%";
        case Verdict::Off: return "off by more than 10%";
    }
    return "";
}

std::string percent(std::optional<double> e) { return e ? fmt::format("{:+.1f}%", 100.0 * *e) : "n/a"; }

void decide(Comparison& c) {
    std::string parts;
    double worst = 0.0;
    for (const Row& r : c.rows)
        if (r.metric == "iteration time" || r.metric == "peak memory") {
            worst = std::max(worst, r.error ? std::abs(*r.error) : INFINITY);
            parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", r.metric, percent(r.error));
        }
    if (c.median_op_error) {
        worst = std::max(worst, *c.median_op_error);
        parts += fmt::format(", median per-op {:.1f}% over {} ops", 100.0 * *c.median_op_error, c.compared_ops);
    }
    c.headline_error = worst;
    c.verdict = verdict_for(worst);
    c.verdict_line = fmt::format("verdict: {} ({})", verdict_words(c.verdict), parts);
}

}  // namespace

std::optional<double> relative_error(double predicted, double measured) {
    if (measured == 0.0) return std::nullopt;
    return (predicted - measured) / measured;
}

Verdict verdict_for(double abs_error) {
    if (abs_error <= 0.05) return Verdict::Within5;
    if (abs_error <= 0.10) return Verdict::Within10;
    return Verdict::Off;
}

Comparison compare(const Figures& p, const Figures& m, double tokens_per_iteration) {
    Comparison c;
    add(c, "iteration time", "s", p.iteration_time_s, m.iteration_time_s);
    add(c, "throughput", "tokens/s", tokens_per_iteration / p.iteration_time_s,
        tokens_per_iteration / m.iteration_time_s);
    add_op_kinds(c, p, m);
    add(c, "exposed communication", "s", p.breakdown.exposed_comm_s(), m.breakdown.exposed_comm_s());
    for (const BreakdownPart& part : breakdown_parts()) {  // each axis' exposed communication
        if (part.comm_axis == nullptr) continue;
        add(c, fmt::format("exposed {} comm", part.comm_axis), "s", p.breakdown.*part.seconds, m.breakdown.*part.seconds);
    }
    add(c, "bubble", "s", p.breakdown.bubble_s, m.breakdown.bubble_s);
    add(c, "peak memory", "bytes", p.peak_memory_bytes, m.peak_memory_bytes);
    add_op_errors(c, p, m);
    decide(c);
    return c;
}

void write_text(std::ostream& out, const Comparison& c) {
    fmt::print(out, "{:<24} {:>14} {:>14} {:>9}\n", "", "predicted", "measured", "error");
    for (const Row& r : c.rows) {
        const bool bytes = r.unit == "bytes";
        const double scale = bytes ? 1.0 / (1024.0 * 1024.0 * 1024.0) : r.unit == "s" ? 1e3 : 1.0;
        const char* unit = bytes ? "GiB" : r.unit == "s" ? "ms" : r.unit.c_str();
        fmt::print(out, "{:<24} {:>14.3f} {:>14.3f} {:>9}  {}\n", r.metric, r.predicted * scale, r.measured * scale,
                   percent(r.error), unit);
    }
    out << c.verdict_line << "\n";
}

void write_csv(std::ostream& out, const Comparison& c) {
    out << "metric,unit,predicted,measured,relative_error\n";
    for (const Row& r : c.rows)
        fmt::print(out, "{},{},{:.9g},{:.9g},{}\n", r.metric, r.unit, r.predicted, r.measured,
                   r.error ? fmt::format("{:.6g}", *r.error) : "");
}

nlohmann::json comparison_json(const Comparison& c, const std::string& scenario) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Row& r : c.rows) {
        nlohmann::json row = {{"metric", r.metric}, {"unit", r.unit}, {"predicted", r.predicted}, {"measured", r.measured}};
        row["relative_error"] = r.error ? nlohmann::json(*r.error) : nlohmann::json(nullptr);
        rows.push_back(row);
    }
    nlohmann::json j = {{"scenario", scenario}, {"rows", rows}, {"verdict", verdict_words(c.verdict)},
                        {"verdict_line", c.verdict_line}, {"headline_error", c.headline_error},
                        {"compared_ops", c.compared_ops}};
    j["median_op_error"] = c.median_op_error ? nlohmann::json(*c.median_op_error) : nlohmann::json(nullptr);
    return j;
}

}  // namespace cuboid::validate
