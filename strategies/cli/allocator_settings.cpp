// A sweep builds and frees a program of 10^5 - 10^6 ops per point: op lists, their index and
// durations, tens of MB each. With glibc's defaults a freed block that large goes back to the
// kernel (it was mmap'ed, or the heap top is trimmed), and the next point takes it again page by
// page: in the 24-point GPT-3 175B benchmark that was 250,000 page faults, about a tenth of the
// CPU time. Blocks up to 32 MiB (the largest threshold glibc accepts) now come from the heap, and
// the heap keeps up to 1 GiB freed at its top for the next point; larger blocks are still mmap'ed.
// The trim threshold binds only the main thread's heap, though: the sweep's workers allocate from
// arenas of their own, made of 64 MiB heaps, and glibc unmaps such a heap whenever it empties,
// whatever the threshold, unless the top pad (memory kept beyond a request) is at least a heap's
// size. With the pad, a worker's next point finds its heaps mapped and touched: 18,000 of the
// 84,000 page faults of the benchmark's sweep on one thread, and most of those of a second sweep
// in the same process, went. The pad only reserves address space when the main heap grows.
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
    constexpr int kThreadHeapSize = 64 << 20;  // bytes; glibc's HEAP_MAX_SIZE on 64-bit systems
    mallopt(M_MMAP_THRESHOLD, kHeapUpTo);
    mallopt(M_TRIM_THRESHOLD, kKeepFreed);
    mallopt(M_TOP_PAD, kThreadHeapSize);
#endif
}

}  // namespace cuboid::cli
