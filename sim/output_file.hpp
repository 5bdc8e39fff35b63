// Writing an output so that no result is lost: a program's file outputs go through OutputFile,
// its standard output through finish_standard_output.
//
// An existing regular file, or a path where nothing exists yet, is written as a temporary file
// in the same folder, which replaces the target (rename) only once every byte is written,
// flushed, synced and closed: a reader sees the old file or the whole new one, never a torn
// one, and a run that fails (bad input, a full disk, a signal) leaves the old file as it was.
// A target that exists but is not a regular file (a character device like /dev/null or
// /dev/stdout, a FIFO) is written in place, every write and the close checked: renaming over
// it would replace the device itself.
#pragma once

#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

namespace cuboid::sim {

// An output that could not be written: the path and the operating system's reason.
class OutputError : public std::runtime_error {
public:
    OutputError(const std::string& path, const std::string& reason);
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

class OutputFile {
public:
    // Opens the temporary (or the device): a folder that cannot take the file fails here,
    // before any work. Throws OutputError.
    explicit OutputFile(std::string path);
    // Not committed: the temporary is removed, the target left as it was.
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    std::ostream& stream();
    const std::string& path() const { return path_; }

    // Flushes, syncs and closes, then renames the temporary onto the target. Throws OutputError
    // (the temporary removed) when any step failed, including any earlier write.
    void commit();

private:
    class Buffer;
    std::string path_;
    std::string target_;     // the file a symbolic link points at; empty: path_ itself
    std::string temporary_;  // empty: written in place
    std::unique_ptr<Buffer> buffer_;
    std::unique_ptr<std::ostream> stream_;
};

// Writes `text` to `path` as OutputFile does. Throws OutputError.
void write_output_file(const std::string& path, const std::string& text);

// Flushes a program's standard output (or any stream standing for it) and throws OutputError
// naming "standard output" when a write or the flush failed (a full disk, a closed pipe).
void finish_standard_output(std::ostream& out);

}  // namespace cuboid::sim
