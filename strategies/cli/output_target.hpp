// Where an output option (--json, --csv, --trace) sends its text: a file written whole or not at
// all (sim::OutputFile, opened when the command starts so that a folder that cannot take the file
// costs no simulation, replaced only by commit), or '-' for standard output, or nowhere.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "sim/output_file.hpp"

namespace cuboid::cli {

class OutputTarget {
public:
    // `path`: absent (no output), "-" (standard output: `standard_output`), else a file.
    // Throws sim::OutputError.
    OutputTarget(const std::optional<std::string>& path, std::ostream& standard_output);

    bool given() const { return given_; }
    bool to_standard_output() const { return given_ && !file_; }

    // The file's stream, or standard output. Only when given().
    std::ostream& stream();

    // Puts the file in place (standard output is checked once, at the program's end).
    // Throws sim::OutputError.
    void commit();

private:
    bool given_ = false;
    std::ostream& standard_output_;
    std::optional<sim::OutputFile> file_;
};

}  // namespace cuboid::cli
