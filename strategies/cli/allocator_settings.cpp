// A sweep builds and frees a program of 10^5 - 10^6 ops per point: op lists, their index and
// durations, tens of MB each. With glibc's defaults a freed block that large goes back to the
// kernel (it was mmap'ed, or the heap top is trimmed), and the next point takes it again page by
// page: in the 24-point GPT-3 175B benchmark that was 250,000 page faults, about a tenth of the
// CPU time. Blocks up to 32 MiB (the largest threshold glibc accepts) now come from the heap, and
// the heap keeps up to 1 GiB freed at its top for the next point; larger blocks are still mmap'ed.
// The results are unchanged: only where memory comes from changes.
#include "strategies/cli/allocator_settings.hpp"

#include <cstdlib>  // defines __GLIBC__ (through features.h) on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cuboid::cli {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
    constexpr int kHeapUpTo = 32 << 20;  // bytes; glibc refuses more (half its 64 MiB heap size)
    constexpr int kKeepFreed = 1 << 30;  // bytes
    mallopt(M_MMAP_THRESHOLD, kHeapUpTo);
    mallopt(M_TRIM_THRESHOLD, kKeepFreed);
#endif
}

}  // namespace cuboid::cli
