// f(i) for every i in [0, n), each index exactly once, on up to `threads` threads (the caller's
// among them). Exception-safe: the first exception any call throws (std::bad_alloc while building
// a huge program, say) stops the handing out of further indices, every thread is joined, and the
// exception is rethrown in the caller, where a plain std::thread would have ended the process
// with std::terminate.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace cuboid::sim {

template <class F>
void parallel_for(std::size_t n, int threads, F f) {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr first_error;
    std::mutex error_mutex;
    const auto worker = [&] {
        try {
            for (std::size_t i = next++; i < n && !failed.load(); i = next++) f(i);
        } catch (...) {
            const std::lock_guard lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
            failed = true;
        }
    };
    {
        const std::size_t helpers = std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n);
        std::vector<std::jthread> pool;  // joined when this block ends, also when starting one throws
        try {
            for (std::size_t t = 1; t < helpers; ++t) pool.emplace_back(worker);
        } catch (...) {
            // No thread to spare (std::system_error): the threads started, and this one, do the rest.
        }
        worker();
    }
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace cuboid::sim
