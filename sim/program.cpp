// Label interning and the dependency-checked op appender of program.hpp.
#include "sim/program.hpp"

#include <cassert>

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

namespace {

template <class Range>
std::uint32_t append(OpList& list, Op op, const Range& deps) {
    const auto index = static_cast<std::uint32_t>(list.ops.size());
    op.first_dep = static_cast<std::uint32_t>(list.deps.size());
    op.dep_count = 0;
    for (const std::uint32_t d : deps) {
        // Dependencies point backwards: that is what makes issue order a valid execution order.
        assert(d < index && "a dependency must be an earlier op of the same list");
        list.deps.push_back(d);
        ++op.dep_count;
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
