// Where a test process writes its files: a folder of its own under the system's temporary
// directory, named by the process id (test processes running at once, and the Release and checked
// builds' runs of one test, never share a file), removed with everything in it when the process
// exits, so that test runs leave nothing behind in the temporary directory.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace cuboid::scratch {

class Folder {
public:
    Folder() : path_(std::filesystem::temp_directory_path() / ("cuboid-test-" + std::to_string(getpid()))) {
        std::filesystem::create_directories(path_);
    }
    ~Folder() {
        std::error_code ignored;  // removing what is left must not turn a passed run into a crash
        std::filesystem::remove_all(path_, ignored);
    }
    Folder(const Folder&) = delete;
    Folder& operator=(const Folder&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// This process's scratch folder, made on first use.
inline const std::filesystem::path& folder() {
    static const Folder made;
    return made.path();
}

// The path of the file `name` in this process's scratch folder.
inline std::filesystem::path file(const std::string& name) { return folder() / name; }

}  // namespace cuboid::scratch
