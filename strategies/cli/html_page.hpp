// One self-contained HTML page: its style inline, no script, no link to anything outside it (a
// report opens the same on a laptop without network as in a browser behind a proxy). The markup
// is also well-formed XML (every element closed, every attribute quoted, only XML's entities),
// so that any XML parser can check it. Every text given is escaped.
#pragma once

#include <string>
#include <vector>

namespace cuboid::cli {

class HtmlPage {
public:
    explicit HtmlPage(const std::string& title);

    void heading(int level, const std::string& text);  // <h2>..<h4>
    void paragraph(const std::string& text, const std::string& css_class = "");
    // A banner no reader misses: the results are partial (why, how many).
    void partial_banner(const std::string& text);
    // Preformatted text (cost sources, the search space as given).
    void preformatted(const std::string& text);
    // Rows of cells; a cell that is a number ("1,234", "1e+09", "-") is right-aligned.
    void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
               const std::string& css_class = "");
    // Name: value lines of an input description.
    void definitions(const std::vector<std::pair<std::string, std::string>>& items);
    // A figure: markup drawn by svg_chart (trusted, already escaped) and its caption.
    void figure(const std::string& svg, const std::string& caption);

    std::string finish() const;

private:
    std::string title_;
    std::string body_;
};

}  // namespace cuboid::cli
