#include "strategies/cli/catalog_bridge.hpp"

#include <memory>

#include "hardware_models/catalog.hpp"
#include "strategies/model_presets.hpp"

namespace cuboid::cli {

std::shared_ptr<const hw::Catalog> parse_builtin_catalog() {
    return std::make_shared<const hw::Catalog>(hw::Catalog::load_builtin());
}

NameResolvers builtin_name_resolvers() {
    // Parsed once per resolver set, shared by the copies of the lookup.
    return builtin_name_resolvers(parse_builtin_catalog());
}

NameResolvers builtin_name_resolvers(std::shared_ptr<const hw::Catalog> catalog) {
    NameResolvers n;
    n.model_preset = [](const std::string& name) {
        ModelSpec m;
        apply_preset(name, m);
        return m;
    };
    n.gpu_name = [catalog](const std::string& gpu) { return catalog->gpu(gpu).name; };
    n.gpu_system = [catalog](const std::string& gpu) { return catalog->gpu(gpu).system; };
    return n;
}

}  // namespace cuboid::cli
