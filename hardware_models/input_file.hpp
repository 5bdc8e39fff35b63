// The one way an input file (scenario, study, hardware profile, catalog file, nccl-tests log,
// CSV table) is read: only a regular file, and only up to a size its format can sensibly have,
// so that `cuboid run /dev/zero` or a mistyped path to a huge file is refused at once (exit 2)
// instead of reading forever or filling memory.
#pragma once

#include <cstddef>
#include <string>

namespace cuboid {

// Size caps per format: far above any real file of the kind (the shipped ones are a few KiB to
// a few hundred KiB), far below what would exhaust memory.
inline constexpr std::size_t kMaxYamlFileBytes = std::size_t{16} << 20;   // scenarios, studies, profiles, catalogs
inline constexpr std::size_t kMaxTableFileBytes = std::size_t{64} << 20;  // nccl-tests logs, CSV tables

// The whole text of `path`. InputError (at `path`) when it is missing or unreadable, a folder,
// not a regular file (a device, a pipe, a socket), or larger than `max_bytes`; `what` names the
// kind of file in the message ("scenario file").
std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& what);

}  // namespace cuboid
