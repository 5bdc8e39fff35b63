// Trace Event JSON output of trace_writer.hpp.
#include "sim/trace_writer.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/names.hpp"
#include "sim/op_list_index.hpp"

namespace cuboid::sim {
namespace {

constexpr std::size_t kFlushBytes = 1 << 16;

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
            out += c;
        }
    }
    return out;
}

// Trace Event timestamps are microseconds; ps / 1e6 with 6 decimals keeps every picosecond.
double micros(std::int64_t ps) { return static_cast<double>(ps) * 1e-6; }

}  // namespace

TraceWriter::TraceWriter(const Program& program, std::ostream& out, TraceOptions options)
    : program_(program),
      out_(out),
      options_(options),
      begin_(program.ranks.size() * kMaxStreams, 0),
      posted_(program.ranks.size() * kMaxStreams, 0) {
    labels_.reserve(program.labels.size());
    for (const std::string& l : program.labels) labels_.push_back(json_escape(l));
    for (int c = 0; c < 2 + static_cast<int>(program.comm_classes.size()); ++c) {
        categories_.push_back(json_escape(category_name(program, static_cast<OpCategory>(c))));
    }
    buffer_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
    write_metadata();
}

TraceWriter::~TraceWriter() { finish(); }

void TraceWriter::write_metadata() {
    for (std::uint32_t r = 0; r < program_.ranks.size(); ++r) {
        emit(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"gpu {}"}}}})", r, r));
        emit(fmt::format(R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})", r, r));
        StreamId streams = 0;
        for (const Op& op : program_.op_lists[program_.ranks[r].op_list].ops) {
            streams = std::max<StreamId>(streams, static_cast<StreamId>(op.stream + 1));
        }
        for (StreamId s = 0; s < streams; ++s) {
            emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}})", r, s,
                             json_escape(stream_name(program_, s))));
        }
    }
}

const Op& TraceWriter::op_of(std::uint32_t rank, std::uint32_t op) const {
    return program_.op_lists[program_.ranks[rank].op_list].ops[op];
}

std::string_view TraceWriter::category_of(const Op& op) const {
    const auto c = static_cast<std::size_t>(op.category);
    return c < categories_.size() ? std::string_view(categories_[c]) : std::string_view("unknown");
}

std::size_t TraceWriter::slot(std::uint32_t rank, std::uint32_t op) const {
    return static_cast<std::size_t>(rank) * kMaxStreams + op_of(rank, op).stream;
}

void TraceWriter::compute_started(std::uint32_t rank, std::uint32_t op, Time t) { begin_[slot(rank, op)] = t.value; }

void TraceWriter::compute_finished(std::uint32_t rank, std::uint32_t op, Time t) {
    const Op& o = op_of(rank, op);
    slice(rank, o.stream, labels_[o.label], category_of(o), begin_[slot(rank, op)], t.value);
}

void TraceWriter::comm_posted(std::uint32_t rank, std::uint32_t op, Time t) { posted_[slot(rank, op)] = t.value; }

void TraceWriter::comm_started(std::uint32_t rank, std::uint32_t op, Time t) {
    const std::size_t k = slot(rank, op);
    begin_[k] = t.value;
    if (options_.wait_slices && t.value > posted_[k]) {
        slice(rank, op_of(rank, op).stream, "wait", "wait", posted_[k], t.value);
    }
}

void TraceWriter::comm_finished(std::uint32_t rank, std::uint32_t op, Time t) {
    const Op& o = op_of(rank, op);
    slice(rank, o.stream, labels_[o.label], category_of(o), begin_[slot(rank, op)], t.value);
}

void TraceWriter::slice(std::uint32_t rank, StreamId stream, std::string_view name, std::string_view cat,
                        std::int64_t begin, std::int64_t end) {
    emit(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"name":"{}","cat":"{}","ts":{:.6f},"dur":{:.6f}}})", rank,
                     stream, name, cat, micros(begin), micros(end - begin)));
}

void TraceWriter::emit(const std::string& event) {
    if (!first_) buffer_ += ",\n";
    first_ = false;
    buffer_ += event;
    if (buffer_.size() >= kFlushBytes) flush();
}

void TraceWriter::flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
}

void TraceWriter::finish() {
    if (finished_) return;
    finished_ = true;
    buffer_ += "\n]}\n";
    flush();
    out_.flush();
}

}  // namespace cuboid::sim
