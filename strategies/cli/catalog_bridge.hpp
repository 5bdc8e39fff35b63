// The name lookups of the real catalogs (model presets from strategies, GPUs from
// hardware_models) in the form the loader takes.
#pragma once

#include <memory>

#include "strategies/cli/scenario_keys.hpp"

namespace cuboid::hw {
class Catalog;
}

namespace cuboid::cli {

// The built-in catalog, parsed, to share between the name lookups, the hardware cache and the
// points of a run (a parse costs about as much as setting up a sweep point).
std::shared_ptr<const hw::Catalog> parse_builtin_catalog();

NameResolvers builtin_name_resolvers();
// The same on a built-in catalog the caller parsed already (a sweep parses it once per run).
NameResolvers builtin_name_resolvers(std::shared_ptr<const hw::Catalog> catalog);

}  // namespace cuboid::cli
