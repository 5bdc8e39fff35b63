// The sweep (and search) page (html_report.hpp): the rows of sweep_row_json, laid out for people.
#include <algorithm>

#include <fmt/format.h>

#include "strategies/cli/html_page.hpp"
#include "strategies/cli/html_report.hpp"

namespace cuboid::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kChartedPlans = 15;    // bars of the fastest plans
constexpr std::size_t kBrokenDownPlans = 5;  // breakdowns of the fastest plans

// "tensor=8 pipeline=2": the swept keys by their last part.
std::string swept_values(const SweepResult& r, std::size_t point) {
    std::string s;
    for (std::size_t a = 0; a < r.axes.size(); ++a) {
        const std::string& key = r.axes[a].first;
        s += fmt::format("{}{}={}", a ? " " : "", key.substr(key.rfind('.') + 1), r.points[point][a]);
    }
    return s;
}

std::string optional_number(const Json& row, const char* field, double scale, const char* format) {
    if (!row.contains(field) || !row.at(field).is_number()) return "-";
    return fmt::format(fmt::runtime(format), row.at(field).get<double>() * scale);
}

// The cost of training the tokens: at the scenario's price per GPU-hour, else the catalog's
// (training_cost's rented cost); none without a token budget or a price.
std::optional<double> cost_of(const RunResult& x) {
    if (x.cost_usd) return x.cost_usd;
    return x.training_cost ? x.training_cost->rented_usd : std::nullopt;
}

bool has_cost(const SweepResult& r) {
    for (const std::size_t i : r.order)
        if (r.outcomes[i].status == PointStatus::Ok && r.outcomes[i].result && cost_of(*r.outcomes[i].result))
            return true;
    return false;
}

void write_inputs(HtmlPage& page, const SweepResult& r, const SweepPageText& text) {
    page.heading(2, "Inputs");
    std::vector<std::pair<std::string, std::string>> items{{"scenario file", r.source_file},
                                                           {"points", text.summary}};
    for (const auto& [key, values] : r.axes) items.push_back({key, fmt::format("{}", fmt::join(values, ", "))});
    items.push_back({"ran", fmt::format("{:.1f} s, {} rank{} x {} threads", r.wall_s, r.ranks, r.ranks > 1 ? "s" : "",
                                        r.threads)});
    page.definitions(items);
    // The cluster and model as the fastest plan ran them (axes may change either).
    const auto best = std::find_if(r.order.begin(), r.order.end(),
                                   [&](std::size_t i) { return r.outcomes[i].status == PointStatus::Ok; });
    if (best == r.order.end()) return;
    const Json& run = r.outcomes[*best].run_json;
    if (!run.contains("cluster")) return;
    const Json& c = run.at("cluster");
    page.heading(3, "Cluster and model of the fastest plan");
    page.definitions(
        {{"model", run.value("model_preset", std::string("(keys)"))},
         {"cluster", fmt::format("{} nodes x {} {}", c.value("nodes", 0), c.value("gpus_per_node", 0),
                                 c.value("gpu", std::string()))},
         {"network", fmt::format("{} in a node; {} x {} Gbit/s {} per node, {}", c.value("intra_node", std::string()),
                                 c.value("nics_per_node", 0), c.value("nic_gbps", 0.0),
                                 c.value("inter_node", std::string()), c.value("topology", std::string()))},
         {"global batch", std::to_string(run.at("plan").value("global_batch", 0))},
         {"precision", run.at("plan").value("precision", std::string())}});
}

void write_ranking(HtmlPage& page, const SweepResult& r, const SweepPageText& text, bool cost) {
    std::vector<std::string> header{"rank", "point", "status", "iteration s", "tokens/s", "MFU %", "peak GB"};
    // With a cost: the days and costs ideal and with failures (goodput: checkpoints, restarts, lost work).
    if (cost)
        header.insert(header.end(), {"days", "days with failures", "cost USD", "cost USD with failures", "owned USD",
                                     "owned USD with failures", "energy MWh"});
    header.push_back("Pareto (time, memory)");
    std::vector<std::vector<std::string>> rows;
    std::size_t shown = 0, left = 0;
    for (const std::size_t i : r.order) {
        if (r.outcomes[i].status == PointStatus::NotRun) continue;
        if (shown == kMaxHtmlRows) {
            ++left;
            continue;
        }
        const Json row = sweep_row_json(r, i);
        const std::optional<double> usd = r.outcomes[i].result ? cost_of(*r.outcomes[i].result) : std::nullopt;
        std::vector<std::string> cells{std::to_string(++shown), text.label(r, i), row.at("status").get<std::string>(),
                                       optional_number(row, "iteration_time_s", 1.0, "{:.4f}"),
                                       optional_number(row, "tokens_per_s", 1.0, "{:.4g}"),
                                       optional_number(row, "mfu", 100.0, "{:.1f}"),
                                       optional_number(row, "peak_memory_bytes", 1e-9, "{:.1f}")};
        if (cost)
            cells.insert(cells.end(), {optional_number(row, "time_to_train_s", 1.0 / 86400.0, "{:.3g}"),
                                       optional_number(row.value("goodput", Json::object()),
                                                       "effective_time_to_train_s", 1.0 / 86400.0, "{:.3g}"),
                                       usd ? whole_text(*usd) : "-",
                                       whole_or_dash(row, "/training_cost_with_failures/rented_usd"),
                                       whole_or_dash(row, "/training_cost/owned_usd"),
                                       whole_or_dash(row, "/training_cost_with_failures/owned_usd"),
                                       optional_number(row, "energy_kwh", 1e-3, "{:.1f}")});
        cells.push_back(r.pareto[i] ? "yes" : "");
        rows.push_back(std::move(cells));
    }
    page.table(header, rows, "ranking");
    if (left > 0)
        page.paragraph(fmt::format("{} more rows: every row is in the CSV and JSON outputs (--csv, --json)", left),
                       "note");
}

void write_charts(HtmlPage& page, const SweepResult& r, const SweepPageText& text, bool cost) {
    std::vector<std::size_t> ok;
    for (const std::size_t i : r.order)
        if (r.outcomes[i].status == PointStatus::Ok && r.outcomes[i].result) ok.push_back(i);
    if (ok.empty()) return;
    page.heading(2, "The fastest plans");
    std::vector<svg::Bar> bars;
    for (std::size_t k = 0; k < ok.size() && k < kChartedPlans; ++k) {
        const double t = r.outcomes[ok[k]].result->iteration_time_s;
        bars.push_back({text.label(r, ok[k]), t, fmt::format("{:.4f} s", t), k == 0});
    }
    page.figure(svg::bar_chart(bars), "iteration time, seconds (the fastest highlighted)");

    page.heading(2, "Pareto front");
    // Points labelled by their rank in the table (the ok rows come first, fastest first).
    std::vector<svg::ScatterPoint> points;
    for (std::size_t k = 0; k < ok.size(); ++k) {
        const RunResult& x = *r.outcomes[ok[k]].result;
        const bool front = r.pareto[ok[k]];
        points.push_back({front ? fmt::format("#{}", k + 1) : "", x.iteration_time_s, x.peak_memory_bytes / 1e9, front});
    }
    page.figure(svg::scatter_chart(points, "iteration time, s", "peak memory per GPU, GB"),
                "every plan that fits; in red the plans no other beats on both time and memory, labelled by rank");
    if (cost) {
        points.clear();
        for (std::size_t k = 0; k < ok.size(); ++k)
            if (const RunResult& x = *r.outcomes[ok[k]].result; cost_of(x) && x.time_to_train_s)
                points.push_back({fmt::format("#{}", k + 1), *x.time_to_train_s / 86400.0, *cost_of(x), false});
        mark_pareto_front(points);
        for (auto& p : points)
            if (!p.on_front) p.label.clear();
        page.figure(svg::scatter_chart(points, "time to train, days", "cost rented, USD"),
                    "every plan that fits; in red the plans no other beats on both time to train and cost, labelled "
                    "by rank");
    }

    page.heading(2, "Where the fastest plans' iteration time goes");
    std::vector<std::pair<std::string, const RunResult*>> plans;
    for (std::size_t k = 0; k < ok.size() && k < kBrokenDownPlans; ++k)
        plans.push_back({fmt::format("{}. {}", k + 1, text.label(r, ok[k])), &*r.outcomes[ok[k]].result});
    page.figure(breakdown_chart(plans),
                "seconds per iteration on the GPU of the critical path: compute, recomputation, communication not "
                "hidden behind compute, and the pipeline bubble (fill and drain, and waiting for a busier stage)");
}

}  // namespace

std::string sweep_html(const SweepResult& r, const SweepPageText& given) {
    SweepPageText text = given;
    if (!text.label) text.label = swept_values;
    HtmlPage page(fmt::format("cuboid {}: {}", text.command, r.name));
    if (r.partial())
        page.partial_banner(fmt::format("{} of {} points done ({}); the ranking covers those only", r.done(),
                                        r.outcomes.size(), r.partial_reason()));
    write_inputs(page, r, text);
    const bool cost = has_cost(r);
    page.heading(2, "Ranking, fastest first");
    write_ranking(page, r, text, cost);
    write_charts(page, r, text, cost);
    return page.finish();
}

}  // namespace cuboid::cli
