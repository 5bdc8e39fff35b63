#include "calibrate/fit/profile_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>

#include "sim/output_file.hpp"
#include "hardware_models/gpu_spec.hpp"

namespace cuboid::calibrate {
namespace {

double us(Time t) { return to_seconds(t) * 1e6; }
double us(double seconds) { return seconds * 1e6; }

// Flow maps keep one measurement per line, as in the format's examples.
void begin_row(YAML::Emitter& e) { e << YAML::Flow << YAML::BeginMap; }

void emit_metadata(YAML::Emitter& e, const FittedProfile& f) {
    e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : f.profile.metadata)
        e << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
    e << YAML::EndMap;
}

void emit_gemm(YAML::Emitter& e, const FittedProfile& f) {
    e << YAML::Key << "gemm" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : f.profile.gemm) {
        begin_row(e);
        e << YAML::Key << "precision" << YAML::Value << hw::precision_name(g.precision);
        e << YAML::Key << "m" << YAML::Value << g.m << YAML::Key << "n" << YAML::Value << g.n;
        e << YAML::Key << "k" << YAML::Value << g.k << YAML::Key << "tflops" << YAML::Value << g.tflops;
        e << YAML::EndMap;
    }
    e << YAML::EndSeq;
}

void emit_memory(YAML::Emitter& e, const FittedProfile& f) {
    e << YAML::Key << "memory" << YAML::Value << YAML::BeginSeq;
    for (const auto& m : f.profile.memory) {
        begin_row(e);
        e << YAML::Key << "kind" << YAML::Value << m.kind << YAML::Key << "bytes" << YAML::Value << m.bytes;
        e << YAML::Key << "gb_per_s" << YAML::Value << m.gb_per_s << YAML::EndMap;
    }
    e << YAML::EndSeq;
}

void emit_collectives(YAML::Emitter& e, const FittedProfile& f) {
    e << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
    for (const auto& c : f.collectives) {
        // A sample with a per-size table is a block, one table point per line.
        if (c.sample.table.empty()) begin_row(e);
        else e << YAML::Block << YAML::BeginMap;
        e << YAML::Key << "kind" << YAML::Value << hw::collective_kind_name(c.sample.kind);
        e << YAML::Key << "algorithm" << YAML::Value << c.sample.algorithm;
        e << YAML::Key << "ranks" << YAML::Value << c.sample.ranks;
        e << YAML::Key << "nodes" << YAML::Value << c.sample.nodes;
        e << YAML::Key << "alpha_us" << YAML::Value << us(c.sample.alpha);
        e << YAML::Key << "bus_gb_per_s" << YAML::Value << c.sample.bus_gb_per_s;
        e << YAML::Key << "points" << YAML::Value << c.fit.points;
        e << YAML::Key << "max_rel_error" << YAML::Value << c.fit.max_relative_error;
        if (!c.sample.table.empty()) {
            e << YAML::Key << "table" << YAML::Value << YAML::BeginSeq;
            for (const auto& p : c.sample.table) {
                begin_row(e);
                // Sizes are whole bytes; written in full, not rounded to 6 digits.
                e << YAML::Key << "bytes" << YAML::Value << static_cast<std::int64_t>(std::llround(p.bytes));
                e << YAML::Key << "bus_gb_per_s" << YAML::Value << p.bus_gb_per_s << YAML::EndMap;
            }
            e << YAML::EndSeq;
        }
        e << YAML::EndMap;
    }
    e << YAML::EndSeq;
}

void emit_extras(YAML::Emitter& e, const FittedProfile& f) {
    e << YAML::Key << "batched_gemm" << YAML::Value << YAML::BeginSeq;
    for (const auto& b : f.batched_gemm) {
        begin_row(e);
        e << YAML::Key << "precision" << YAML::Value << b.precision << YAML::Key << "batch" << YAML::Value << b.batch;
        e << YAML::Key << "m" << YAML::Value << b.m << YAML::Key << "n" << YAML::Value << b.n;
        e << YAML::Key << "k" << YAML::Value << b.k << YAML::Key << "tflops" << YAML::Value << b.tflops;
        e << YAML::EndMap;
    }
    e << YAML::EndSeq;
    e << YAML::Key << "host_copies" << YAML::Value << YAML::BeginSeq;
    for (const auto& c : f.copies) {
        begin_row(e);
        e << YAML::Key << "direction" << YAML::Value << c.direction;
        e << YAML::Key << "alpha_us" << YAML::Value << us(c.fit.alpha);
        e << YAML::Key << "gb_per_s" << YAML::Value << c.fit.beta.value / 1e9;
        e << YAML::Key << "max_rel_error" << YAML::Value << c.fit.max_relative_error << YAML::EndMap;
    }
    e << YAML::EndSeq;
}

void emit_raw(YAML::Emitter& e, const Measurements& r) {
    e << YAML::Key << "measurements" << YAML::Value << YAML::BeginMap;
    if (r.launch_seconds) e << YAML::Key << "launch_back_to_back_us" << YAML::Value << us(*r.launch_seconds);
    if (r.launch_sync_seconds) e << YAML::Key << "launch_sync_us" << YAML::Value << us(*r.launch_sync_seconds);
    e << YAML::Key << "gemm" << YAML::Value << YAML::BeginSeq;
    for (const auto* list : {&r.gemm, &r.batched_gemm})
        for (const auto& g : *list) {
            begin_row(e);
            e << YAML::Key << "precision" << YAML::Value << g.precision << YAML::Key << "batch" << YAML::Value << g.batch;
            e << YAML::Key << "m" << YAML::Value << g.m << YAML::Key << "n" << YAML::Value << g.n;
            e << YAML::Key << "k" << YAML::Value << g.k << YAML::Key << "time_us" << YAML::Value << us(g.seconds);
            e << YAML::EndMap;
        }
    e << YAML::EndSeq << YAML::Key << "memory" << YAML::Value << YAML::BeginSeq;
    for (const auto& m : r.memory) {
        begin_row(e);
        e << YAML::Key << "kernel" << YAML::Value << m.kernel << YAML::Key << "bytes" << YAML::Value << m.bytes;
        e << YAML::Key << "time_us" << YAML::Value << us(m.seconds) << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
    for (const auto& c : r.collectives) {
        begin_row(e);
        e << YAML::Key << "kind" << YAML::Value << c.kind << YAML::Key << "ranks" << YAML::Value << c.ranks;
        e << YAML::Key << "nodes" << YAML::Value << c.nodes << YAML::Key << "algorithm" << YAML::Value << c.algorithm;
        e << YAML::Key << "bytes" << YAML::Value << c.bytes << YAML::Key << "time_us" << YAML::Value << us(c.seconds);
        e << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::Key << "host_copies" << YAML::Value << YAML::BeginSeq;
    for (const auto& c : r.copies) {
        begin_row(e);
        e << YAML::Key << "direction" << YAML::Value << c.direction << YAML::Key << "bytes" << YAML::Value << c.bytes;
        e << YAML::Key << "time_us" << YAML::Value << us(c.seconds) << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
    e << YAML::Key << "notes" << YAML::Value << YAML::BeginSeq;
    for (const auto& n : r.notes) e << YAML::DoubleQuoted << n;
    e << YAML::EndSeq;
}

}  // namespace

std::string profile_yaml(const FittedProfile& f) {
    YAML::Emitter e;
    e.SetDoublePrecision(6);  // 6 significant digits: far below the run-to-run spread of timings
    e << YAML::BeginMap;
    e << YAML::Key << "format" << YAML::Value << kProfileFormat;
    emit_metadata(e, f);
    if (f.profile.kernel_launch) e << YAML::Key << "kernel_launch_us" << YAML::Value << us(*f.profile.kernel_launch);
    emit_gemm(e, f);
    emit_memory(e, f);
    emit_collectives(e, f);
    emit_extras(e, f);
    emit_raw(e, f.raw);
    e << YAML::EndMap;
    if (!e.good()) throw std::runtime_error("profile writer: " + e.GetLastError());
    return std::string(e.c_str()) + "\n";
}

void write_profile(const FittedProfile& f, const std::string& path) {
    sim::write_output_file(path, profile_yaml(f));
}

}  // namespace cuboid::calibrate
