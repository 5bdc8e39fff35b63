// Charts as inline SVG text, for the HTML report (html_report.hpp): horizontal bars, stacked
// horizontal bars and a scatter plot with a highlighted Pareto front. Drawn here, in cuboid, so
// that a page needs no script, font or style sheet from anywhere: every length is a number in the
// SVG, proportional to the value it shows. Every text is escaped (html_escape).
#pragma once

#include <string>
#include <vector>

namespace cuboid::cli::svg {

// The colours of the charts (the headless-browser test looks for them in the screenshot).
inline constexpr const char* kBarColour = "#4e79a7";
inline constexpr const char* kWinnerColour = "#f28e2b";
inline constexpr const char* kFrontColour = "#e15759";
inline constexpr const char* kDominatedColour = "#bab0ac";
// The colours of a stacked bar's parts, in order (repeated past the last).
inline constexpr const char* kPartColours[] = {"#59a14f", "#8cd17d", "#b07aa1", "#edc948",
                                               "#76b7b2", "#9c755f", "#ff9da7"};

// The text with &, <, >, " and ' as entities: safe in an element and in a quoted attribute.
std::string html_escape(const std::string& text);

// A whole number with thousands separators (dollars, GPU-hours): "1,234,567"; "-" when not finite.
std::string whole_text(double v);

struct Bar {
    std::string label;
    double value = 0.0;       // drawn as 0 when negative or not finite
    std::string value_text;   // shown after the bar
    bool highlight = false;   // drawn in kWinnerColour
};

// One bar per row, their lengths proportional to the values (the longest bar spans the plot).
// Each bar is a <rect class="bar" data-value="..."> with a <title> tooltip.
std::string bar_chart(const std::vector<Bar>& bars);

struct StackedBar {
    std::string label;
    std::vector<double> parts;  // in the order of the part names
    std::string total_text;     // shown after the bar
};

// One bar per row, each the sum of its parts laid end to end (one <rect class="part"> each),
// on one scale for every bar; a legend of the part names.
std::string stacked_bar_chart(const std::vector<std::string>& part_names, const std::vector<StackedBar>& bars);

struct ScatterPoint {
    std::string label;
    double x = 0.0;
    double y = 0.0;
    bool on_front = false;  // drawn in kFrontColour and joined to the front's other points
};

// Points on linear axes with ticks; the front's points joined by a line in the order of x.
std::string scatter_chart(const std::vector<ScatterPoint>& points, const std::string& x_title,
                          const std::string& y_title);

// Tick values for an axis over [lo, hi]: multiples of 1, 2 or 5 x 10^k, about `count` of them,
// covering the range.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

}  // namespace cuboid::cli::svg
