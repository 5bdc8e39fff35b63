#include "strategies/cli/html_page.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "strategies/cli/svg_chart.hpp"

namespace cuboid::cli {
namespace {

using svg::html_escape;

// The whole style of the page: system fonts only (nothing to fetch).
constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px auto;max-width:1180px;color:#1d2733;background:#ffffff}"
    "h1{font-size:26px;margin:0 0 8px 0}h2{font-size:20px;margin:28px 0 8px 0;border-bottom:2px solid #dfe6ee}"
    "h3{font-size:16px;margin:20px 0 6px 0}h4{font-size:14px;margin:14px 0 4px 0}"
    "table{border-collapse:collapse;margin:6px 0 12px 0;font-size:13px}"
    "th{background:#dfe6ee;text-align:left;padding:4px 8px;border:1px solid #c5ced8}"
    "td{padding:3px 8px;border:1px solid #dfe6ee}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:14px}dt{font-weight:bold}dd{margin:0}"
    "pre{background:#f5f7f9;padding:8px;font-size:12px;white-space:pre-wrap}"
    "figure{margin:8px 0 16px 0}figcaption{font-size:13px;color:#4a5663}"
    ".partial{background:#fff3cd;border:2px solid #e0a800;padding:8px 12px;font-weight:bold}"
    ".note{font-size:13px;color:#4a5663}";

// A number as the report writes one ("1,234", "-", "1e+09", "12.5").
bool numeric(const std::string& cell) {
    return !cell.empty() && cell.find_first_not_of("0123456789.,-+e") == std::string::npos;
}

}  // namespace

HtmlPage::HtmlPage(const std::string& title) : title_(title) {}

void HtmlPage::heading(int level, const std::string& text) {
    level = std::clamp(level, 2, 4);
    body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, html_escape(text));
}

void HtmlPage::paragraph(const std::string& text, const std::string& css_class) {
    body_ += css_class.empty() ? fmt::format("<p>{}</p>\n", html_escape(text))
                               : fmt::format("<p class=\"{}\">{}</p>\n", html_escape(css_class), html_escape(text));
}

void HtmlPage::partial_banner(const std::string& text) {
    body_ += fmt::format("<p class=\"partial\" id=\"partial\">Partial: {}</p>\n", html_escape(text));
}

void HtmlPage::preformatted(const std::string& text) { body_ += fmt::format("<pre>{}</pre>\n", html_escape(text)); }

void HtmlPage::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                     const std::string& css_class) {
    body_ += css_class.empty() ? "<table>" : fmt::format("<table class=\"{}\">", html_escape(css_class));
    body_ += "<thead><tr>";
    for (const auto& h : header) body_ += fmt::format("<th>{}</th>", html_escape(h));
    body_ += "</tr></thead><tbody>\n";
    for (const auto& row : rows) {
        body_ += "<tr>";
        for (const auto& cell : row)
            body_ += fmt::format("<td{}>{}</td>", numeric(cell) ? " class=\"num\"" : "", html_escape(cell));
        body_ += "</tr>\n";
    }
    body_ += "</tbody></table>\n";
}

void HtmlPage::definitions(const std::vector<std::pair<std::string, std::string>>& items) {
    body_ += "<dl>";
    for (const auto& [name, value] : items)
        body_ += fmt::format("<dt>{}</dt><dd>{}</dd>", html_escape(name), html_escape(value));
    body_ += "</dl>\n";
}

void HtmlPage::figure(const std::string& svg, const std::string& caption) {
    body_ += fmt::format("<figure>{}<figcaption>{}</figcaption></figure>\n", svg, html_escape(caption));
}

std::string HtmlPage::finish() const {
    return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
                       "<meta name=\"generator\" content=\"cuboid\"/><title>{0}</title>"
                       "<style>{1}</style></head>\n<body>\n<h1>{0}</h1>\n{2}</body></html>\n",
                       html_escape(title_), kStyle, body_);
}

}  // namespace cuboid::cli
