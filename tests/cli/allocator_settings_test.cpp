// keep_freed_memory_for_reuse (strategies/cli/allocator_settings.hpp): after it, a block of a
// size a point's op lists take comes from the heap, not from a mapping of its own, and a freed
// one stays with the process for the next point.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include "strategies/cli/allocator_settings.hpp"

// AddressSanitizer replaces malloc, so glibc's settings and mallinfo2 say nothing there.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUBOID_MALLOC_REPLACED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CUBOID_MALLOC_REPLACED 1
#endif

#if defined(__GLIBC__) && !defined(CUBOID_MALLOC_REPLACED)
#include <malloc.h>

TEST_CASE("after keep_freed_memory_for_reuse, blocks up to 32 MiB come from the heap and stay", "[cli][allocator]") {
    cuboid::cli::keep_freed_memory_for_reuse();
    constexpr std::size_t kBlock = 24U << 20;  // bytes: above glibc's default threshold of 128 KiB
    const std::size_t mapped_before = mallinfo2().hblkhd;
    void* block = std::malloc(kBlock);
    REQUIRE(block != nullptr);
    static_cast<char*>(block)[kBlock - 1] = 1;
    CHECK(mallinfo2().hblkhd == mapped_before);  // not a mapping of its own
    std::free(block);
    // Freed, it is kept: the heap still holds at least the block's size as free memory.
    CHECK(mallinfo2().fordblks >= kBlock);
}

TEST_CASE("after keep_freed_memory_for_reuse, a thread's emptied heap stays mapped", "[cli][allocator]") {
    cuboid::cli::keep_freed_memory_for_reuse();
    // A thread other than the main one allocates from an arena of its own, in 64 MiB heaps: three
    // blocks of 24 MiB take two heaps, and freeing the third empties the second, which glibc
    // would unmap without the top pad (the arena would shrink by the heap).
    std::size_t held = 0;
    std::size_t after_free = 0;
    std::thread([&] {
        constexpr std::size_t kBlock = 24U << 20;  // bytes
        void* blocks[3] = {};
        for (void*& b : blocks) {
            b = std::malloc(kBlock);
            if (b != nullptr) static_cast<char*>(b)[kBlock - 1] = 1;
        }
        held = mallinfo2().arena;
        std::free(blocks[2]);
        after_free = mallinfo2().arena;
        std::free(blocks[1]);
        std::free(blocks[0]);
    }).join();
    CHECK(held > 0);
    CHECK(after_free >= held);
}
#else
TEST_CASE("keep_freed_memory_for_reuse runs outside glibc's own malloc", "[cli][allocator]") {
    cuboid::cli::keep_freed_memory_for_reuse();
    SUCCEED("no allocator settings to check");
}
#endif

TEST_CASE("huge pages are asked of glibc's malloc unless the environment already decides", "[cli][allocator]") {
    using cuboid::cli::tunables_with_huge_pages;
    CHECK(tunables_with_huge_pages(nullptr) == "glibc.malloc.hugetlb=1");
    CHECK(tunables_with_huge_pages("") == "glibc.malloc.hugetlb=1");
    // Other tunables stay, the request is appended.
    CHECK(tunables_with_huge_pages("glibc.malloc.arena_max=2") == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
    // A value naming the tunable (the user's, or set by the re-execution itself) is final: no
    // second re-execution, and hugetlb=0 turns it off.
    CHECK(tunables_with_huge_pages("glibc.malloc.hugetlb=0").empty());
    CHECK(tunables_with_huge_pages("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1").empty());
}
