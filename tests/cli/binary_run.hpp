// The built `cuboid` executable run through the shell as a script would run it (the tests that
// drive the binary; CUBOID_BINARY names it).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <catch2/catch.hpp>

#include "tests/cli/cli_outcome.hpp"
#include "tests/scratch_dir.hpp"

namespace cuboid::cli::test {

// Runs `cuboid ARGS`, stdout captured, stderr into a file read back.
inline Outcome run_cuboid(const std::string& args) {
    const auto err_path = cuboid::scratch::file("cuboid_binary_test.err");
    const std::string command = std::string("'") + CUBOID_BINARY + "' " + args + " 2> '" + err_path.string() + "'";
    Outcome o;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe);
    std::array<char, 4096> chunk{};
    while (const std::size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) o.out.append(chunk.data(), n);
    const int status = pclose(pipe);
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    o.err.assign(std::istreambuf_iterator<char>(err), {});
    std::filesystem::remove(err_path);
    return o;
}

// Writes `text` to the file `prefix` + `name` of the temporary folder and returns its path (each
// test's own prefix keeps the tests that run at once apart).
inline std::string write_temp_file(const std::string& prefix, const std::string& name, const std::string& text) {
    std::string file = prefix;
    file += name;
    const auto path = cuboid::scratch::file(file);
    std::ofstream(path) << text;
    return path.string();
}

}  // namespace cuboid::cli::test
