#include "validate/published/csv_table.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hardware_models/input_file.hpp"

namespace cuboid::validate {
namespace {

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream in(line);
    std::string field;
    while (std::getline(in, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    return fields;
}

}  // namespace

CsvTable CsvTable::read(const std::string& path) {
    std::istringstream in(read_input_file(path, kMaxTableFileBytes, "CSV table"));
    CsvTable table;
    table.path_ = path;
    std::string line;
    if (!std::getline(in, line)) throw std::runtime_error(path + ": empty file");
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    table.header_ = split(line);
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        table.rows_.push_back(split(line));
        table.rows_.back().resize(table.header_.size());
    }
    return table;
}

std::size_t CsvTable::column_index(const std::string& column) const {
    const auto it = std::find(header_.begin(), header_.end(), column);
    if (it == header_.end()) throw std::runtime_error(path_ + ": no column '" + column + "'");
    return static_cast<std::size_t>(it - header_.begin());
}

const std::string& CsvTable::text(std::size_t row, const std::string& column) const {
    return rows_.at(row).at(column_index(column));
}

double CsvTable::number(std::size_t row, const std::string& column) const {
    const std::string& t = text(row, column);
    try {
        return std::stod(t);
    } catch (const std::exception&) {
        throw std::runtime_error(path_ + ": row " + std::to_string(row + 2) + ", column '" + column +
                                 "': not a number: '" + t + "'");
    }
}

}  // namespace cuboid::validate
