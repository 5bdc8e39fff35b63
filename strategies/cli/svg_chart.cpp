#include "strategies/cli/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace cuboid::cli::svg {
namespace {

// Layout of the bar charts, in SVG user units (pixels at 100 % zoom).
constexpr double kPlotWidth = 480.0;   // the longest bar
constexpr double kValueWidth = 180.0;  // the value text after a bar
constexpr double kRowHeight = 26.0;
constexpr double kBarHeight = 18.0;
constexpr double kPad = 8.0;
constexpr double kCharWidth = 7.2;     // of a 13 px sans-serif label, to size the label column
constexpr int kLegendColumns = 4;
constexpr double kLegendItemWidth = 190.0;

double drawable(double v) { return std::isfinite(v) && v > 0.0 ? v : 0.0; }

// A label column wide enough for the longest label, within limits.
double label_width(const std::vector<std::string>& labels) {
    std::size_t longest = 0;
    for (const auto& l : labels) longest = std::max(longest, l.size());
    return std::clamp(static_cast<double>(longest) * kCharWidth + 16.0, 120.0, 440.0);
}

std::string open_svg(double width, double height, const std::string& css_class) {
    return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" class="{}" width="{:.0f}" height="{:.0f}" )"
                       R"(viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="13">)",
                       css_class, width, height, width, height);
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start", const char* extra = "") {
    return fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="{}"{}>{}</text>)", x, y, anchor, extra,
                       html_escape(s));
}

std::string part_colour(std::size_t k) { return kPartColours[k % std::size(kPartColours)]; }

std::string number(double v) { return fmt::format("{:.4g}", v); }

// An axis tick: large round values in full ("6,000,000", not "6e+06").
std::string tick_text(double v) { return std::abs(v) >= 1e4 ? whole_text(v) : number(v); }

}  // namespace

std::string html_escape(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += ch;
        }
    }
    return out;
}

std::string whole_text(double v) {
    if (!std::isfinite(v)) return "-";
    const std::string digits = fmt::format("{:.0f}", std::abs(v));
    std::string grouped;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
        grouped += digits[i];
    }
    return (v < 0 ? "-" : "") + grouped;
}

std::string bar_chart(const std::vector<Bar>& bars) {
    std::vector<std::string> labels;
    double max_value = 0.0;
    for (const Bar& b : bars) {
        labels.push_back(b.label);
        max_value = std::max(max_value, drawable(b.value));
    }
    const double left = label_width(labels);
    const double width = left + kPlotWidth + kValueWidth;
    const double height = 2 * kPad + kRowHeight * static_cast<double>(bars.size());
    std::string s = open_svg(width, height, "bar-chart");
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const Bar& b = bars[i];
        const double y = kPad + kRowHeight * static_cast<double>(i);
        const double length = max_value > 0.0 ? kPlotWidth * drawable(b.value) / max_value : 0.0;
        s += text(left - 8, y + kBarHeight * 0.75, b.label, "end");
        s += fmt::format(R"(<rect class="bar" data-value="{}" x="{:.1f}" y="{:.1f}" width="{:.3f}" height="{:.1f}" )"
                         R"(fill="{}"><title>{}: {}</title></rect>)",
                         number(b.value), left, y, length, kBarHeight, b.highlight ? kWinnerColour : kBarColour,
                         html_escape(b.label), html_escape(b.value_text));
        s += text(left + length + 6, y + kBarHeight * 0.75, b.value_text);
    }
    return s + "</svg>";
}

std::string stacked_bar_chart(const std::vector<std::string>& part_names, const std::vector<StackedBar>& bars) {
    std::vector<std::string> labels;
    double max_total = 0.0;
    for (const StackedBar& b : bars) {
        labels.push_back(b.label);
        double total = 0.0;
        for (const double p : b.parts) total += drawable(p);
        max_total = std::max(max_total, total);
    }
    const double left = label_width(labels);
    const double width = std::max(left + kPlotWidth + kValueWidth, kLegendColumns * kLegendItemWidth + 2 * kPad);
    const double bars_height = 2 * kPad + kRowHeight * static_cast<double>(bars.size());
    const auto legend_rows = (part_names.size() + kLegendColumns - 1) / kLegendColumns;
    const double height = bars_height + kRowHeight * static_cast<double>(legend_rows) + kPad;
    std::string s = open_svg(width, height, "stacked-bar-chart");
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const StackedBar& b = bars[i];
        const double y = kPad + kRowHeight * static_cast<double>(i);
        s += text(left - 8, y + kBarHeight * 0.75, b.label, "end");
        double x = left;
        for (std::size_t k = 0; k < b.parts.size(); ++k) {
            const double length = max_total > 0.0 ? kPlotWidth * drawable(b.parts[k]) / max_total : 0.0;
            const std::string name = k < part_names.size() ? part_names[k] : "";
            s += fmt::format(R"(<rect class="part" data-value="{}" x="{:.3f}" y="{:.1f}" width="{:.3f}" )"
                             R"(height="{:.1f}" fill="{}"><title>{}: {}</title></rect>)",
                             number(b.parts[k]), x, y, length, kBarHeight, part_colour(k), html_escape(name),
                             number(b.parts[k]));
            x += length;
        }
        s += text(x + 6, y + kBarHeight * 0.75, b.total_text);
    }
    for (std::size_t k = 0; k < part_names.size(); ++k) {
        const double x = kPad + kLegendItemWidth * static_cast<double>(k % kLegendColumns);
        const double y = bars_height + kRowHeight * static_cast<double>(k / kLegendColumns);
        s += fmt::format(R"(<rect class="legend" x="{:.1f}" y="{:.1f}" width="14" height="14" fill="{}"/>)", x, y,
                         part_colour(k));
        s += text(x + 20, y + 12, part_names[k]);
    }
    return s + "</svg>";
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || count < 1) return {lo};
    const double raw = (hi - lo) / count;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / magnitude;
    const double step = (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * magnitude;
    const double first = std::floor(lo / step);
    const double last = std::ceil(hi / step);
    std::vector<double> ticks;
    for (double k = first; k <= last + 0.5; k += 1.0) ticks.push_back(k * step);
    return ticks;
}

std::string scatter_chart(const std::vector<ScatterPoint>& points, const std::string& x_title,
                          const std::string& y_title) {
    constexpr double kWidth = 760.0, kHeight = 420.0;
    constexpr double kLeft = 90.0, kRight = 170.0, kTop = 20.0, kBottom = 56.0;
    const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
    // The axes' ranges: the points' own, widened where every point has the same value.
    auto range = [&](auto coordinate) {
        double lo = INFINITY, hi = -INFINITY;
        for (const auto& p : points) {
            lo = std::min(lo, coordinate(p));
            hi = std::max(hi, coordinate(p));
        }
        if (points.empty()) lo = 0.0, hi = 1.0;
        if (!(hi > lo)) {
            const double d = lo != 0.0 ? std::abs(lo) * 0.1 : 1.0;
            lo -= d, hi += d;
        }
        // A margin, so that no point sits on the frame.
        const double margin = 0.04 * (hi - lo);
        lo -= margin, hi += margin;
        return nice_ticks(lo, hi);
    };
    const auto x_ticks = range([](const ScatterPoint& p) { return p.x; });
    const auto y_ticks = range([](const ScatterPoint& p) { return p.y; });
    const double x0 = x_ticks.front(), x1 = x_ticks.back(), y0 = y_ticks.front(), y1 = y_ticks.back();
    auto px = [&](double x) { return kLeft + plot_w * (x - x0) / (x1 - x0); };
    auto py = [&](double y) { return kTop + plot_h * (1.0 - (y - y0) / (y1 - y0)); };

    std::string s = open_svg(kWidth, kHeight, "scatter-chart");
    for (const double t : x_ticks) {
        s += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#e3e3e3"/>)", px(t), kTop,
                         kTop + plot_h);
        s += text(px(t), kTop + plot_h + 18, tick_text(t), "middle");
    }
    for (const double t : y_ticks) {
        s += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#e3e3e3"/>)", kLeft, py(t),
                         kLeft + plot_w);
        s += text(kLeft - 6, py(t) + 4, tick_text(t), "end");
    }
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#888"/>)", kLeft,
                     kTop, plot_w, plot_h);
    s += text(kLeft + plot_w / 2, kHeight - 12, x_title, "middle");
    s += text(16, kTop + plot_h / 2, y_title, "middle",
              fmt::format(R"x( transform="rotate(-90 16 {:.1f})")x", kTop + plot_h / 2).c_str());

    std::vector<const ScatterPoint*> front;
    for (const auto& p : points)
        if (p.on_front) front.push_back(&p);
    std::sort(front.begin(), front.end(), [](const auto* a, const auto* b) { return a->x < b->x; });
    if (front.size() > 1) {
        std::string path;
        for (const auto* p : front) path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", px(p->x), py(p->y));
        s += fmt::format(R"(<polyline class="front" points="{}" fill="none" stroke="{}" stroke-width="2"/>)", path,
                         kFrontColour);
    }
    for (const auto& p : points) {
        s += fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="7" fill="{}"><title>{}: {}, {}</title></circle>)",
                         p.on_front ? "point front" : "point", px(p.x), py(p.y),
                         p.on_front ? kFrontColour : kDominatedColour, html_escape(p.label), number(p.x), number(p.y));
        if (!p.label.empty()) s += text(px(p.x) + 9, py(p.y) - 8, p.label, "start", R"( font-size="12")");
    }
    return s + "</svg>";
}

}  // namespace cuboid::cli::svg
