// How the process's allocator keeps memory that a simulated point has freed.
#pragma once

#include <string>

namespace cuboid::cli {

// Called once at the start of a program that simulates many points (cuboid, the sweep benchmark,
// the published-data check); see allocator_settings.cpp. Process-wide by nature: the allocator's
// settings belong to the process, so only a main() calls it.
void keep_freed_memory_for_reuse();

// Called first thing in such a main(), before any thread starts: unless the environment already
// says (GLIBC_TUNABLES names glibc.malloc.hugetlb, or the process runs under valgrind), re-executes
// the program with glibc's malloc asking for transparent huge pages (glibc.malloc.hugetlb=1), so
// that a program of hundreds of MB is faulted in 2 MiB at a time instead of 4 KiB. Returns only
// when it does not re-execute (or the exec fails: the run then goes on as it is).
void restart_with_huge_pages(char** argv);

// The GLIBC_TUNABLES value that asks for huge pages, given the current one (null: unset), or an
// empty string when the current value already decides it.
std::string tunables_with_huge_pages(const char* current);

}  // namespace cuboid::cli
