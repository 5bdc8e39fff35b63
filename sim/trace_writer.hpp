// Writes what the executor does as a Trace Event JSON file, for Perfetto (ui.perfetto.dev) or
// chrome://tracing: one process per rank ("gpu N"), one thread per stream, one complete ("X")
// slice per op with its label as name and its category as cat; times in microseconds.
//
// The file is written as the simulation runs (a 3072-rank iteration has tens of millions of
// slices); only the start time of the op running on each (rank, stream) is held.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/observer.hpp"
#include "sim/program.hpp"

namespace cuboid::sim {

struct TraceOptions {
    // Also draw, on the op's stream, a "wait" slice from when a communication op was posted to
    // when every member had posted it (time lost to the slowest member).
    bool wait_slices = true;
};

class TraceWriter : public SimObserver {
public:
    TraceWriter(const Program& program, std::ostream& out, TraceOptions options = {});
    ~TraceWriter() override;
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    void compute_started(std::uint32_t rank, std::uint32_t op, Time t) override;
    void compute_finished(std::uint32_t rank, std::uint32_t op, Time t) override;
    void comm_posted(std::uint32_t rank, std::uint32_t op, Time t) override;
    void comm_started(std::uint32_t rank, std::uint32_t op, Time t) override;
    void comm_finished(std::uint32_t rank, std::uint32_t op, Time t) override;

    // Closes the JSON document (idempotent; the destructor calls it too).
    void finish();

private:
    const Op& op_of(std::uint32_t rank, std::uint32_t op) const;
    std::string_view category_of(const Op& op) const;
    std::size_t slot(std::uint32_t rank, std::uint32_t op) const;
    void write_metadata();
    void slice(std::uint32_t rank, StreamId stream, std::string_view name, std::string_view cat,
               std::int64_t begin, std::int64_t end);
    void emit(const std::string& event);
    void flush();

    const Program& program_;
    std::ostream& out_;
    TraceOptions options_;
    std::vector<std::string> labels_;      // JSON-escaped
    std::vector<std::string> categories_;  // category value -> its name, JSON-escaped
    std::vector<std::int64_t> begin_;      // per (rank, stream): start of the running op (ps)
    std::vector<std::int64_t> posted_;     // per (rank, stream): when the running comm op was posted
    std::string buffer_;
    bool first_ = true;
    bool finished_ = false;
};

}  // namespace cuboid::sim
