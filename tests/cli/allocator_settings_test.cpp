// keep_freed_memory_for_reuse (strategies/cli/allocator_settings.hpp): after it, a block of a
// size a point's op lists take comes from the heap, not from a mapping of its own, and a freed
// one stays with the process for the next point.
#include <catch2/catch.hpp>

#include <cstdlib>

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
#else
TEST_CASE("keep_freed_memory_for_reuse runs outside glibc's own malloc", "[cli][allocator]") {
    cuboid::cli::keep_freed_memory_for_reuse();
    SUCCEED("no allocator settings to check");
}
#endif
