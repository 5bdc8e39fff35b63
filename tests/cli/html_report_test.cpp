// The HTML report's writers: escaping, charts whose lengths follow the values, the Pareto front's
// membership, the page's self-containment, and a partial sweep said at the top of its page.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>

#include "hardware_models/errors.hpp"
#include "strategies/cli/html_page.hpp"
#include "strategies/cli/html_report.hpp"
#include "strategies/cli/svg_chart.hpp"
#include "strategies/cli/sweep_output.hpp"

using namespace cuboid;
using namespace cuboid::cli;

namespace {

// The value of attribute `name` of every element of `css_class` ("bar", "part"), in order.
std::vector<double> attribute_of(const std::string& svg, const std::string& css_class, const std::string& name) {
    const std::regex element("<rect class=\"" + css_class + "\"[^>]*>");
    const std::regex attribute(" " + name + "=\"([^\"]*)\"");
    std::vector<double> values;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), element); it != std::sregex_iterator(); ++it) {
        const std::string tag = it->str();
        std::smatch m;
        REQUIRE(std::regex_search(tag, m, attribute));
        values.push_back(std::stod(m[1].str()));
    }
    return values;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("html_escape turns markup characters into entities", "[html]") {
    CHECK(svg::html_escape("<a href=\"x\">Tom & Jerry's</a>") ==
          "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
    CHECK(svg::html_escape("plain text 1.5") == "plain text 1.5");
}

TEST_CASE("a page escapes every text it is given and needs nothing from outside", "[html]") {
    HtmlPage page("study <b>&</b>");
    page.heading(2, "<script>alert(1)</script>");
    page.table({"name", "value"}, {{"<img onerror=x>", "1,234"}});
    page.definitions({{"file", "a\"b"}});
    page.preformatted("x < y");
    page.partial_banner("1 of 2 <done>");
    const std::string html = page.finish();
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("<title>study &lt;b&gt;&amp;&lt;/b&gt;</title>") != std::string::npos);
    CHECK(html.find("<td class=\"num\">1,234</td>") != std::string::npos);  // numbers right-aligned
    CHECK(html.find("<dd>a&quot;b</dd>") != std::string::npos);
    CHECK(html.find("<pre>x &lt; y</pre>") != std::string::npos);
    CHECK(html.find("class=\"partial\"") != std::string::npos);
    // Self-contained: no script, no style sheet, font or image fetched from anywhere.
    for (const char* outside : {"src=", "href=", "<link", "@import", "url("}) CHECK(html.find(outside) == std::string::npos);
}

TEST_CASE("bar lengths are proportional to the values; the longest spans the plot", "[html][svg]") {
    const std::string svg = svg::bar_chart({{"a", 1.0, "1", false},
                                            {"b", 2.0, "2", true},
                                            {"c", 4.0, "4", false},
                                            {"d", -3.0, "-3", false},
                                            {"e", NAN, "nan", false}});
    const auto width = attribute_of(svg, "bar", "width");
    REQUIRE(width.size() == 5);
    CHECK(width[0] > 0.0);
    CHECK(width[1] == Approx(2.0 * width[0]));
    CHECK(width[2] == Approx(4.0 * width[0]));
    CHECK(width[2] == Approx(480.0));  // the plot's width
    CHECK(width[3] == 0.0);            // nothing to draw for a negative or missing value
    CHECK(width[4] == 0.0);
    CHECK(occurrences(svg, svg::kWinnerColour) == 1);  // only the highlighted bar
    CHECK(occurrences(svg, svg::kBarColour) == 4);
}

TEST_CASE("stacked bars: parts end to end, every bar on one scale", "[html][svg]") {
    const std::string svg =
        svg::stacked_bar_chart({"p", "q"}, {{"one", {1.0, 3.0}, "4 s"}, {"two", {2.0, 0.0}, "2 s"}});
    const auto width = attribute_of(svg, "part", "width");
    const auto x = attribute_of(svg, "part", "x");
    REQUIRE(width.size() == 4);
    CHECK(width[1] == Approx(3.0 * width[0]));
    CHECK(width[0] + width[1] == Approx(2.0 * (width[2] + width[3])));  // totals 4 and 2
    CHECK(x[1] == Approx(x[0] + width[0]));                            // the second part starts where the first ends
    CHECK(occurrences(svg, "class=\"legend\"") == 2);
}

TEST_CASE("the Pareto front: points no other beats on both values, equal points both on it", "[html]") {
    std::vector<svg::ScatterPoint> points{{"fast, dear", 1.0, 5.0, false}, {"middle", 2.0, 3.0, false},
                                          {"dominated", 3.0, 4.0, false}, {"slow, cheap", 4.0, 1.0, false},
                                          {"middle twin", 2.0, 3.0, false}};
    mark_pareto_front(points);
    CHECK(points[0].on_front);
    CHECK(points[1].on_front);
    CHECK_FALSE(points[2].on_front);
    CHECK(points[3].on_front);
    CHECK(points[4].on_front);
    const std::string svg = svg::scatter_chart(points, "time", "cost");
    CHECK(occurrences(svg, "class=\"point front\"") == 4);
    CHECK(occurrences(svg, "class=\"point\"") == 1);
    CHECK(occurrences(svg, "<polyline class=\"front\"") == 1);
}

TEST_CASE("axis ticks are round numbers covering the range", "[html][svg]") {
    const auto ticks = svg::nice_ticks(3.0, 97.0);
    REQUIRE(ticks.size() >= 2);
    CHECK(ticks.front() <= 3.0);
    CHECK(ticks.back() >= 97.0);
    CHECK(ticks[1] - ticks[0] == Approx(20.0));
    CHECK(svg::nice_ticks(0.0, 0.3).back() == Approx(0.3));
}

TEST_CASE("whole numbers with thousands separators", "[html]") {
    CHECK(whole_text(1234567.4) == "1,234,567");
    CHECK(whole_text(999.0) == "999");
    CHECK(whole_text(1000.0) == "1,000");
    CHECK(whole_text(NAN) == "-");
}

TEST_CASE("--html wants a file name", "[html]") {
    CHECK_THROWS_AS(check_html_path(std::string("-")), InputError);
    CHECK_THROWS_AS(check_html_path(std::string()), InputError);
    CHECK_NOTHROW(check_html_path(std::string("report.html")));
    CHECK_NOTHROW(check_html_path(std::nullopt));
}

TEST_CASE("a partial sweep's page says so and leaves out the points not run", "[html]") {
    SweepResult r;
    r.name = "two <points>";
    r.source_file = "s.yaml";
    r.axes = {{"parallel.tensor", {"1", "2"}}};
    r.points = {{"1"}, {"2"}};
    r.outcomes.resize(2);
    r.outcomes[0].status = PointStatus::Ok;
    RunResult x;
    x.iteration_time_s = 2.5;
    x.breakdown.compute_s = 2.0;
    x.breakdown.bubble_s = 0.5;
    x.bubble_split.schedule_s = 0.5;
    x.fits_in_memory = true;
    r.outcomes[0].result = x;
    r.stopped = "interrupted by SIGINT";
    r = ranked(std::move(r));
    const std::string html = sweep_html(r, {"sweep", "2 points: 1 ok, 1 not run", {}});
    CHECK(html.find("Partial: 1 of 2 points done (interrupted by SIGINT)") != std::string::npos);
    CHECK(html.find("cuboid sweep: two &lt;points&gt;") != std::string::npos);
    CHECK(html.find("tensor=1") != std::string::npos);
    CHECK(html.find("tensor=2") == std::string::npos);  // not run: no row, no bar
    CHECK(occurrences(html, "class=\"stacked-bar-chart\"") == 1);
    CHECK(html.find("data-value=\"2.5\"") != std::string::npos);  // the fastest plan's bar
}
