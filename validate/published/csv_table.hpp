// A small reader for the published-data CSV files: a header row, then one row per line; a field
// may be quoted ("a, b" with "" for a quote inside), but may not span lines.
#pragma once

#include <string>
#include <vector>

namespace cuboid::validate {

class CsvTable {
public:
    static CsvTable read(const std::string& path);  // throws std::runtime_error naming the file

    std::size_t rows() const { return rows_.size(); }
    const std::string& text(std::size_t row, const std::string& column) const;
    double number(std::size_t row, const std::string& column) const;
    bool empty(std::size_t row, const std::string& column) const { return text(row, column).empty(); }

private:
    std::string path_;
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
    std::size_t column_index(const std::string& column) const;
};

}  // namespace cuboid::validate
