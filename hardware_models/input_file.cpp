#include "hardware_models/input_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "hardware_models/errors.hpp"

namespace cuboid {

std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& what) {
    namespace fs = std::filesystem;
    const auto fail = [&](const std::string& why) { throw InputError({path, 0, ""}, why); };
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) fail(fmt::format("cannot open the {} (missing or unreadable)", what));
    if (fs::is_directory(st)) fail(fmt::format("is a folder, not a {}", what));
    if (!fs::is_regular_file(st)) fail(fmt::format("is not a regular file (a device, pipe or socket); give a {}", what));
    const std::uintmax_t size = fs::file_size(path, ec);
    const auto too_large = [&](const std::string& size_text) {
        fail(fmt::format("is {} bytes; a {} may have at most {} bytes", size_text, what, max_bytes));
    };
    if (!ec && size > max_bytes) too_large(fmt::format("{}", size));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) fail(fmt::format("cannot open the {}: {}", what, std::strerror(errno)));
    // Read at most one byte past the cap: the file may have grown since it was measured.
    std::string text;
    char buffer[1 << 16];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0;) {
        text.append(buffer, n);
        if (text.size() > max_bytes) too_large(fmt::format("more than {}", max_bytes));
    }
    if (std::ferror(file.get())) fail(fmt::format("cannot read the {}: {}", what, std::strerror(errno)));
    return text;
}

}  // namespace cuboid
