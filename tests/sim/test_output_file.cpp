// sim::OutputFile: a target gets the whole new text or keeps its old one; a device is written in
// place, never renamed over; every failure names the path and the operating system's reason.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "sim/output_file.hpp"
#include "tests/scratch_dir.hpp"

namespace fs = std::filesystem;
using cuboid::sim::OutputError;
using cuboid::sim::OutputFile;
using cuboid::sim::write_output_file;

namespace {

// A fresh, empty folder per test case.
struct Folder {
    fs::path path;
    explicit Folder(const std::string& tag)
        : path(cuboid::scratch::file("cuboid-output-file-" + std::to_string(getpid()) + "-" + tag)) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~Folder() { fs::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
    std::size_t entries() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), {})); }
};

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    return {std::istreambuf_iterator<char>(f), {}};
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const OutputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("an output replaces its file only when committed", "[sim][output]") {
    const Folder dir("commit");
    const std::string path = dir.file("result.json");
    std::ofstream(path) << "old";
    ::chmod(path.c_str(), 0640);
    {
        OutputFile out(path);
        out.stream() << "new";
        CHECK(slurp(path) == "old");  // nothing visible before the commit
        out.commit();
    }
    CHECK(slurp(path) == "new");
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);  // a replaced file keeps its permissions
    CHECK(dir.entries() == 1);           // no temporary left beside it
}

TEST_CASE("an output dropped before its commit leaves the old file and no temporary", "[sim][output]") {
    const Folder dir("drop");
    const std::string path = dir.file("result.csv");
    std::ofstream(path) << "old";
    {
        OutputFile out(path);
        out.stream() << std::string(1 << 20, 'x');  // more than the buffer: bytes reached the temporary
    }
    CHECK(slurp(path) == "old");
    CHECK(dir.entries() == 1);
    {
        OutputFile out(dir.file("new.csv"));
        out.stream() << "x";
    }
    CHECK(!fs::exists(dir.file("new.csv")));
}

TEST_CASE("a write that fails keeps the old file and names the path and the reason", "[sim][output]") {
    const Folder dir("efbig");
    const std::string path = dir.file("big.csv");
    std::ofstream(path) << "old";
    // In a child: a file size limit makes the writes fail (EFBIG) as a full disk would (ENOSPC).
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        std::signal(SIGXFSZ, SIG_IGN);
        const rlimit limit{4096, 4096};
        setrlimit(RLIMIT_FSIZE, &limit);
        const std::string m = message_of([&] { write_output_file(path, std::string(1 << 20, 'x')); });
        const bool named = m.find(path) != std::string::npos && m.find("File too large") != std::string::npos;
        _exit(named ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(slurp(path) == "old");
    CHECK(dir.entries() == 1);
}

TEST_CASE("a device is written in place and its failures reported", "[sim][output]") {
    write_output_file("/dev/null", "fine");
    const std::string full = message_of([] { write_output_file("/dev/full", std::string(100, 'x')); });
    CHECK(full == "cannot write /dev/full: No space left on device");
    struct stat st {};
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));  // still the device, not a file renamed over it
}

TEST_CASE("a file that cannot be replaced fails before any write", "[sim][output]") {
    const Folder dir("refused");
    CHECK(message_of([] { OutputFile out("/proc/version"); }).rfind("cannot write /proc/version: ", 0) == 0);
    CHECK(message_of([&] { OutputFile out(dir.file("no/such/folder.json")); }).find("No such file or directory") !=
          std::string::npos);
    CHECK(message_of([&] { OutputFile out(dir.path.string()); }) ==
          "cannot write " + dir.path.string() + ": it is a folder");
}

TEST_CASE("a symbolic link's target is replaced, the link kept", "[sim][output]") {
    const Folder dir("link");
    std::ofstream(dir.file("real.json")) << "old";
    fs::create_symlink(dir.file("real.json"), dir.file("link.json"));
    write_output_file(dir.file("link.json"), "new");
    CHECK(fs::is_symlink(dir.file("link.json")));
    CHECK(slurp(dir.file("real.json")) == "new");
}

TEST_CASE("standard output that failed is reported", "[sim][output]") {
    std::ostringstream fine;
    fine << "x";
    cuboid::sim::finish_standard_output(fine);
    std::ostringstream broken;
    broken.setstate(std::ios::badbit);
    CHECK(message_of([&] { cuboid::sim::finish_standard_output(broken); }).rfind("cannot write standard output: ", 0) ==
          0);
}
