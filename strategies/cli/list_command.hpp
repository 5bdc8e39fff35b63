// `cuboid list WHAT`: the names a scenario may use, one per line with a description.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace cuboid::cli {

// What `list` can show: gpus, nodes, networks, topologies, models, schedules, recompute,
// tensor-modes, precisions, keys.
std::vector<std::string> list_topics();

// Throws InputError (key "list") for an unknown topic.
void list_command(const std::string& topic, std::ostream& out);

}  // namespace cuboid::cli
