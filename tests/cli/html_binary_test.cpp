// `--html FILE` through the built `cuboid`: the what-if, sweep and search pages are well-formed
// (an XML parser reads them: Debian's python3), self-contained (nothing fetched from a network or
// a file), hold the tables and charts, escape the study's names and agree with the JSON; a page
// that cannot be written is exit 4 naming the path, and a study stopped early gives a partial page.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/binary_run.hpp"
#include "tests/scratch_dir.hpp"

using cuboid::cli::test::Outcome;
using cuboid::cli::test::run_cuboid;

namespace {

const std::string kData = std::string(CUBOID_SOURCE_DIR) + "/tests/cli/data/";

std::string temp(const std::string& name) {
    return (cuboid::scratch::file("cuboid_html_test_" + name)).string();
}

std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::size_t occurrences(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

// An XML parser reads the page whole: every element closed, every attribute quoted, every
// entity known. Debian's python3 (the notebooks need it too), not the first one on PATH.
bool well_formed(const std::string& path) {
    const std::string command = "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" +
                                path + "' 2>&1";
    return std::system(command.c_str()) == 0;
}

// Nothing the browser would fetch: no script, no style sheet, no image, no font, no link.
void check_self_contained(const std::string& html) {
    const std::regex fetch(R"((src|href)\s*=|<script|<link|<iframe|<object|@import|url\()", std::regex::icase);
    CHECK_FALSE(std::regex_search(html, fetch));
    const std::regex network(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase);
    CHECK_FALSE(std::regex_search(html, network));
}

// A cost as the page writes it: whole dollars with thousands separators.
std::string fmt_whole(double usd) {
    const std::string digits = std::to_string(static_cast<long long>(std::llround(usd)));
    std::string out = ">";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    out.push_back('<');
    return out;
}

}  // namespace

TEST_CASE("whatif --html writes a well-formed, self-contained page with the tables and charts", "[cli][binary][html]") {
    const std::string page = temp("whatif.html"), json = temp("whatif.json");
    const Outcome o = run_cuboid("whatif '" + kData + "html_study.yaml' --threads 2 --quiet --html '" + page +
                                 "' --json '" + json + "'");
    INFO(o.err);
    REQUIRE(o.code == 0);
    const std::string html = read(page);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(well_formed(page));
    check_self_contained(html);
    for (const char* table : {"<table class=\"clusters\">", "<table class=\"models\">", "<table class=\"ranking\">"})
        CHECK(occurrences(html, table) == 1);
    CHECK(occurrences(html, "class=\"bar-chart\"") == 4);  // time, rented, owned, energy
    CHECK(occurrences(html, "class=\"scatter-chart\"") == 1);
    CHECK(occurrences(html, "class=\"stacked-bar-chart\"") == 1);
    CHECK(html.find("class=\"partial\"") == std::string::npos);
    // With failures: a row per cluster with goodput, the days and the costs over the time with
    // failures, as the JSON gives them (whole dollars).
    REQUIRE(occurrences(html, "<table class=\"with-failures\">") == 1);
    const std::string failures = html.substr(html.find("<table class=\"with-failures\">"));
    const std::string failures_table = failures.substr(0, failures.find("</table>"));
    CHECK(occurrences(failures_table, "<tr><td>") == 3);
    // Held in a variable: a range-for over parse(...).at("rows") would walk a destroyed temporary.
    const nlohmann::json study = nlohmann::json::parse(read(json));
    for (const auto& row : study.at("rows")) {
        const auto& cost = row.at("training_cost_with_failures");
        const double days = row.at("goodput").at("effective_time_to_train_s").get<double>() / 86400.0;
        CHECK(days > row.at("time_to_train_days").get<double>());
        INFO(row.at("cluster").get<std::string>() << " " << failures_table);
        CHECK(failures_table.find(fmt_whole(cost.at("rented_usd").get<double>())) != std::string::npos);
    }
    // The study's names escaped, never raw markup.
    CHECK(html.find("h200 &lt;&amp;&gt;") != std::string::npos);
    CHECK(html.find("h200 <&>") == std::string::npos);
    // The time bars show the JSON's times to train, fastest first.
    const auto rows = nlohmann::json::parse(read(json)).at("rows");
    std::vector<double> days;
    for (const auto& row : rows) days.push_back(row.at("time_to_train_days").get<double>());
    std::sort(days.begin(), days.end());
    const auto chart = html.substr(html.find("class=\"bar-chart\""));
    const std::regex value("<rect class=\"bar\" data-value=\"([^\"]+)\"");
    auto it = std::sregex_iterator(chart.begin(), chart.end(), value);
    for (const double d : days) {
        REQUIRE(it != std::sregex_iterator());
        CHECK(std::stod((*it)[1].str()) == Approx(d).epsilon(1e-3));
        ++it;
    }
}

TEST_CASE("sweep --html and search --html write their pages", "[cli][binary][html]") {
    const std::string sweep_page = temp("sweep.html");
    const Outcome s = run_cuboid("sweep '" + kData + "html_sweep.yaml' --threads 2 --quiet --html '" + sweep_page + "'");
    INFO(s.err);
    REQUIRE(s.code == 0);
    std::string html = read(sweep_page);
    CHECK(well_formed(sweep_page));
    check_self_contained(html);
    CHECK(html.find("<title>cuboid sweep: html-report-sweep</title>") != std::string::npos);
    CHECK(occurrences(html, "<table class=\"ranking\">") == 1);
    CHECK(occurrences(html, "<tr><td class=\"num\">") == 16);  // a row per point
    // With the token budget: the days and costs with failures beside the ideal ones.
    for (const char* column : {"<th>days with failures</th>", "<th>cost USD with failures</th>",
                               "<th>owned USD with failures</th>"})
        CHECK(occurrences(html, column) == 1);
    CHECK(occurrences(html, "class=\"bar-chart\"") == 1);
    CHECK(occurrences(html, "class=\"scatter-chart\"") == 2);   // time against memory, and against cost
    CHECK(occurrences(html, "class=\"stacked-bar-chart\"") == 1);
    CHECK(occurrences(html, "class=\"point front\"") >= 2);

    const std::string search_page = temp("search.html");
    const Outcome q = run_cuboid("search '" + kData + "html_search.yaml' --threads 2 --quiet --html '" + search_page + "'");
    INFO(q.err);
    REQUIRE(q.code == 0);
    html = read(search_page);
    CHECK(well_formed(search_page));
    check_self_contained(html);
    CHECK(html.find("<title>cuboid search: html-report-search</title>") != std::string::npos);
    CHECK(html.find(" 1f1b full 1d") != std::string::npos);  // plans in words, as the search table writes them
    CHECK(occurrences(html, "class=\"stacked-bar-chart\"") == 1);
}

TEST_CASE("--html: a page that cannot be written is exit 4, '-' is exit 2, run does not take it", "[cli][binary][html]") {
    const Outcome missing =
        run_cuboid("sweep '" + kData + "html_sweep.yaml' --quiet --html /nonexistent-folder/report.html");
    CHECK(missing.code == 4);
    CHECK(missing.err.find("/nonexistent-folder/report.html") != std::string::npos);
    const Outcome whatif = run_cuboid("whatif '" + kData + "html_study.yaml' --quiet --html /nonexistent-folder/w.html");
    CHECK(whatif.code == 4);
    CHECK(whatif.err.find("/nonexistent-folder/w.html") != std::string::npos);
    const Outcome dash = run_cuboid("sweep '" + kData + "html_sweep.yaml' --html -");
    CHECK(dash.code == 2);
    CHECK(dash.err.find("--html") != std::string::npos);
    const Outcome run = run_cuboid("run '" + kData + "html_sweep.yaml' --html " + temp("run.html"));
    CHECK(run.code == 2);
    CHECK(run.err.find("--html") != std::string::npos);
}

TEST_CASE("a what-if stopped early writes its page marked partial", "[cli][binary][html]") {
    const std::string page = temp("partial.html");
    std::filesystem::remove(page);
    // A memory limit below what any process holds stops the study before its first pair.
    const Outcome o = run_cuboid("whatif '" + kData + "html_study.yaml' --quiet --max-memory 0.001 --html '" + page + "'");
    INFO(o.err);
    const std::string html = read(page);
    CHECK(well_formed(page));
    CHECK(html.find("class=\"partial\"") != std::string::npos);
    CHECK(html.find("Partial: 0 of 3 pairs done (memory limit of 0.001 GiB reached") != std::string::npos);
}
