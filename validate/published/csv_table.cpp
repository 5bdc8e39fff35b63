#include "validate/published/csv_table.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hardware_models/input_file.hpp"

namespace cuboid::validate {
namespace {

// One line of fields. A field in double quotes may hold commas, and "" inside it stands for one
// quote (RFC 4180, without line breaks inside a field).
std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
            fields.back() += '"';
            ++i;
        } else if (c == '"' && (quoted || fields.back().empty())) {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            fields.emplace_back();
        } else {
            fields.back() += c;
        }
    }
    if (quoted) throw std::runtime_error("a quoted field is not closed on its line");
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
    int number = 1;
    const auto fields = [&] {
        try {
            return split(line);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(path + ":" + std::to_string(number) + ": " + e.what());
        }
    };
    table.header_ = fields();
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        table.rows_.push_back(fields());
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
