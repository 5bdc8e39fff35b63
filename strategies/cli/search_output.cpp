#include "strategies/cli/search_output.hpp"

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "strategies/cli/training_columns.hpp"

namespace cuboid::cli {
namespace {

// The top `top` plans that ran and fit, fastest first.
std::vector<std::size_t> top_plans(const SearchResult& r, int top) {
    std::vector<std::size_t> rows;
    for (const std::size_t i : r.plans.order)
        if (r.plans.outcomes[i].status == PointStatus::Ok && rows.size() < static_cast<std::size_t>(top))
            rows.push_back(i);
    return rows;
}

// The point's value on the axis of that scenario key (search_axes); nullptr when the search has no
// such axis (the expert degrees of a dense model).
const std::string* find_value(const SweepResult& p, std::size_t point, std::string_view key) {
    for (std::size_t a = 0; a < p.axes.size(); ++a)
        if (p.axes[a].first == key) return &p.points[point][a];
    return nullptr;
}

const std::string& value(const SweepResult& p, std::size_t point, std::string_view key) {
    if (const std::string* v = find_value(p, point, key)) return *v;
    throw std::logic_error("search result without the axis " + std::string(key));
}

// Where the critical rank's time goes: the parts add up to the iteration time.
void write_breakdown(std::ostream& out, const RunResult& x) {
    std::string line = "       ";
    for (const BreakdownPart& part : breakdown_parts()) {
        const double seconds = x.breakdown.*part.seconds;
        if (!part.always_shown && seconds == 0.0) continue;
        // The first word of the label: "tp" of "tp comm exposed".
        const std::string_view label(part.label);
        line += fmt::format(" {} {:.3f} ", label.substr(0, label.find(' ')), seconds);
    }
    fmt::print(out, "{}s\n", line);
}

}  // namespace

std::string search_summary(const SearchResult& r) {
    const SearchCounts& c = r.counts;
    std::string text = fmt::format("{} candidates: {} invalid, {} pruned by memory, {} pruned by bound, {} simulated",
                                   c.candidates, c.invalid, c.pruned_memory, c.pruned_bound, c.simulated);
    if (c.not_reached) text += fmt::format(", {} not reached", c.not_reached);
    return text;
}

std::string plan_text(const SweepResult& p, std::size_t i) {
    std::string schedule = value(p, i, "parallel.schedule");
    if (schedule == "interleaved") schedule += fmt::format("(v{})", value(p, i, "parallel.virtual_stages"));
    const std::string& c = value(p, i, "parallel.context");
    const std::string context = c == "1" ? "" : fmt::format(" c{}({})", c, value(p, i, "parallel.context_mode"));
    std::string s = fmt::format("t{} p{}{} d{} mb{} {} {} {}", value(p, i, "parallel.tensor"),
                                value(p, i, "parallel.pipeline"), context, value(p, i, "parallel.data"),
                                value(p, i, "training.micro_batch"), schedule, value(p, i, "parallel.recompute"),
                                value(p, i, "parallel.tensor_mode"));
    if (value(p, i, "parallel.overlap_chunks") != "1") s += " overlap" + value(p, i, "parallel.overlap_chunks");
    if (value(p, i, "parallel.sequence_parallel") == "true") s += " sp";
    s += " zero" + value(p, i, "parallel.zero_stage");
    // Hybrid sharding: the shard group, where it is smaller than data x context.
    if (const std::string* sg = find_value(p, i, "parallel.shard_group")) {
        const long replicas = std::stol(value(p, i, "parallel.data")) * std::stol(c);
        if (std::stol(*sg) < replicas) s += " shard" + *sg;
    }
    // A mixture of experts: its expert degrees.
    if (const std::string* ep = find_value(p, i, "parallel.expert"))
        s += " ep" + *ep + " etp" + value(p, i, "parallel.expert_tensor");
    return s;
}

std::optional<std::size_t> best_plan(const SearchResult& r) {
    const auto rows = top_plans(r, 1);
    if (rows.empty()) return std::nullopt;
    return rows.front();
}

void write_search_table(std::ostream& out, const SearchResult& r, int top) {
    const SweepResult& p = r.plans;
    fmt::print(out, "search    {} ({})\n", p.name, p.source_file);
    fmt::print(out, "space     {}\n", search_summary(r));
    fmt::print(out, "time      {:.2f} s on {} threads ({:.2f} s checking memory and bounds, {:.2f} s simulating)\n\n",
               r.wall_s, p.threads, r.check_wall_s, r.wall_s - r.check_wall_s);
    if (p.partial())
        fmt::print(out, "partial   {}: the best plans found so far, not proven the best of the space\n\n",
                   p.partial_reason());
    const auto rows = top_plans(r, top);
    if (rows.empty()) {
        fmt::print(out, "no plan of the space is valid and fits in GPU memory\n");
        return;
    }
    std::vector<const RunResult*> results;
    for (const std::size_t i : rows) results.push_back(&*p.outcomes[i].result);
    const TrainingColumns training(results);
    fmt::print(out, "{:>4}  {:<58} {:>11} {:>9} {:>6} {:>8}{}\n", "rank", "plan", "iteration_s", "bound_s", "MFU %",
               "peak GB", training.header());
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const std::size_t i = rows[k];
        const RunResult& x = *results[k];
        fmt::print(out, "{:>4}  {:<58} {:>11.4f} {:>9.4f} {:>6.1f} {:>8.1f}{}\n", k + 1, plan_text(p, i),
                   x.iteration_time_s, r.bound_s[i], 100.0 * x.mfu, x.peak_memory_bytes / 1e9, training.cells(x));
        write_breakdown(out, x);
    }
    fmt::print(out, "\nbound_s: the longer of the busiest stage's compute plus the pipeline fill and one rank's longest "
                    "chain of kernels and uncontended collectives; plans whose bound reached the top times were not "
                    "simulated\n");
    if (training.any()) fmt::print(out, "{}\n", training.legend());
}

nlohmann::ordered_json search_json(const SearchResult& r, int top) {
    const SearchCounts& c = r.counts;
    nlohmann::ordered_json j;
    j["search"] = {{"name", r.plans.name},
                   {"source_file", r.plans.source_file},
                   {"candidates", c.candidates},
                   {"invalid", c.invalid},
                   {"pruned_memory", c.pruned_memory},
                   {"pruned_bound", c.pruned_bound},
                   {"simulated", c.simulated},
                   {"threads", r.plans.threads},
                   {"ranks", r.plans.ranks},
                   {"check_wall_s", r.check_wall_s},
                   {"wall_s", r.wall_s}};
    if (c.not_reached) j["search"]["not_reached"] = c.not_reached;
    if (r.plans.partial()) {
        j["search"]["partial"] = true;
        j["search"]["reason"] = r.plans.partial_reason();
    }
    j["plans"] = nlohmann::ordered_json::array();
    for (const std::size_t i : top_plans(r, top)) {
        auto row = sweep_row_json(r.plans, i);
        row["bound_s"] = r.bound_s[i];
        row["plan_text"] = plan_text(r.plans, i);
        j["plans"].push_back(std::move(row));
    }
    return j;
}

}  // namespace cuboid::cli
