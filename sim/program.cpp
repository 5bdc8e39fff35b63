// Label interning and the dependency-checked op appender of program.hpp.
#include "sim/program.hpp"

#include <cassert>
#include <limits>
#include <stdexcept>
#include <string>

namespace cuboid::sim {

std::uint32_t Program::intern(const std::string& label) {
    // Builders intern a label per op (millions of calls), so the lookup must not scan `labels`.
    // Labels appended to the vector by hand are picked up here before the lookup.
    for (auto i = static_cast<std::uint32_t>(label_index.size()); i < labels.size(); ++i) {
        label_index.emplace(labels[i], i);
    }
    const auto [it, added] = label_index.emplace(label, static_cast<std::uint32_t>(labels.size()));
    if (added) labels.push_back(label);
    return it->second;
}

PackedGemmShape PackedGemmShape::of(const GemmShape& g) {
    const auto fits = [](std::int64_t x) { return x >= 0 && x <= std::numeric_limits<std::int32_t>::max(); };
    if (!fits(g.m) || !fits(g.n) || !fits(g.k) || !fits(g.batch)) {
        throw std::length_error("GEMM shape " + std::to_string(g.m) + " x " + std::to_string(g.n) + " x " +
                                std::to_string(g.k) + " (batch " + std::to_string(g.batch) +
                                ") has a dimension outside 0..2^31-1");
    }
    return {static_cast<std::int32_t>(g.m), static_cast<std::int32_t>(g.n), static_cast<std::int32_t>(g.k),
            static_cast<std::int32_t>(g.batch)};
}

void throw_too_many_dependencies(std::uint32_t count) {
    throw std::length_error("an op with " + std::to_string(count) + " dependencies (at most " +
                            std::to_string(kMaxOpDependencies) + ")");
}

namespace {

template <class Range>
std::uint32_t append(OpList& list, Op op, const Range& deps) {
    const auto index = static_cast<std::uint32_t>(list.ops.size());
    // Checked first, so that a refused op leaves the list as it was.
    if (deps.size() > kMaxOpDependencies) throw_too_many_dependencies(static_cast<std::uint32_t>(deps.size()));
    op.first_dep = static_cast<std::uint32_t>(list.deps.size());
    op.dep_count = static_cast<std::uint16_t>(deps.size());
    for (const std::uint32_t d : deps) {
        // Dependencies point backwards: that is what makes issue order a valid execution order.
        assert(d < index && "a dependency must be an earlier op of the same list");
        list.deps.push_back(d);
    }
    list.ops.push_back(op);
    return index;
}

}  // namespace

std::uint32_t OpListBuilder::add(Op op, std::initializer_list<std::uint32_t> deps) {
    return append(list_, op, deps);
}

std::uint32_t OpListBuilder::add(Op op, const std::vector<std::uint32_t>& deps) {
    return append(list_, op, deps);
}

}  // namespace cuboid::sim
