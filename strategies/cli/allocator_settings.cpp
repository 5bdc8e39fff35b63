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
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
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


// Huge pages. On Linux with transparent huge pages in "madvise" mode (Debian's default), memory is
// faulted in 4 KiB pages unless the program asks: a 1T-parameter plan on 3,072 GPUs builds a 440 MB
// program and took 108,000 page faults, a third of its run on a virtual machine where a fault is
// dear, and its lists span more pages than the TLB holds. glibc (2.35 on) asks for it, for its heap
// and its mappings alike, when the tunable glibc.malloc.hugetlb is 1; tunables are read only when
// a process starts, hence the re-execution (bench/results/2026-11-29-huge-pages-2core.txt: that run
// 1.8 s -> 0.65 s, 1,100 faults). A user's own GLIBC_TUNABLES that names the tunable is kept as it
// is (glibc.malloc.hugetlb=0 turns this off), and valgrind, which would not follow the
// re-execution, is left alone. Kernels with huge pages "never" ignore the request; results are
// unchanged either way.
std::string tunables_with_huge_pages(const char* current) {
    constexpr const char* kHugePages = "glibc.malloc.hugetlb=1";
    if (current == nullptr || *current == '\0') return kHugePages;
    if (std::strstr(current, "glibc.malloc.hugetlb") != nullptr) return {};
    return std::string(current) + ":" + kHugePages;
}

void restart_with_huge_pages(char** argv) {
#if defined(__GLIBC__) && defined(__linux__)
    const char* preload = std::getenv("LD_PRELOAD");
    if (preload != nullptr && std::strstr(preload, "vgpreload") != nullptr) return;
    const char* current = std::getenv("GLIBC_TUNABLES");
    const std::string wanted = tunables_with_huge_pages(current);
    if (wanted.empty()) return;
    const std::string before = current == nullptr ? std::string() : std::string(current);
    if (setenv("GLIBC_TUNABLES", wanted.c_str(), 1) != 0) return;
    // The program's own file, by its real path: exec'd as /proc/self/exe, the process would be
    // named "exe" in ps and top.
    std::string self(4096, '\0');
    const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
    if (length > 0) {
        self.resize(static_cast<std::size_t>(length));
        execv(self.c_str(), argv);
    }
    // Not re-executed (no /proc, say): go on as started, with the environment as it was.
    if (current == nullptr) unsetenv("GLIBC_TUNABLES");
    else setenv("GLIBC_TUNABLES", before.c_str(), 1);
#else
    (void)argv;
#endif
}

}  // namespace cuboid::cli
