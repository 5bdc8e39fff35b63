// How the process's allocator keeps memory that a simulated point has freed.
#pragma once

namespace cuboid::cli {

// Called once at the start of a program that simulates many points (cuboid, the sweep benchmark,
// the published-data check); see allocator_settings.cpp. Process-wide by nature: the allocator's
// settings belong to the process, so only a main() calls it.
void keep_freed_memory_for_reuse();

}  // namespace cuboid::cli
