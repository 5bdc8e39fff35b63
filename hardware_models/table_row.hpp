// The row of a descriptor table (a span of rows, each with a `value` member) for one value: the
// one lookup of cuboid's tables of kinds (schedules, context modes, tensor modes, topologies).
#pragma once

#include <span>
#include <stdexcept>
#include <string>

namespace cuboid {

// std::logic_error naming `table` when no row has the value: every enumerator has a row, which
// each table's test checks, so a miss is a programming error.
template <class Row, class E>
const Row& table_row(std::span<const Row> rows, E value, const char* table) {
    for (const Row& r : rows)
        if (r.value == value) return r;
    throw std::logic_error(std::string(table) + ": a value with no row in the table");
}

}  // namespace cuboid
