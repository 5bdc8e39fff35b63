// The name lookups of the real catalogs (model presets from strategies, GPUs from
// hardware_models) in the form the loader takes.
#pragma once

#include "strategies/cli/scenario_keys.hpp"

namespace cuboid::cli {

NameResolvers builtin_name_resolvers();

}  // namespace cuboid::cli
