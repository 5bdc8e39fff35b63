#include "strategies/cli/list_command.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "hardware_models/catalog.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/topology_kinds.hpp"
#include "strategies/cli/enum_names.hpp"
#include "strategies/cli/scenario_keys.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/text_report.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/model_presets.hpp"
#include "strategies/names.hpp"

namespace cuboid::cli {
namespace {

void print_catalog(std::ostream& out, hw::CatalogSection section) {
    for (const auto& row : hw::Catalog::load_builtin().describe(section)) {
        fmt::print(out, "{:<18} {}\n", row.name, row.description);
        if (!row.figures.empty()) fmt::print(out, "{:<18}   {}\n", "", row.figures);
        if (!row.source.empty()) fmt::print(out, "{:<18}   source: {}\n", "", row.source);
    }
}

void print_models(std::ostream& out) {
    for (const auto& p : model_presets()) {
        std::string aliases = join(p.aliases);
        fmt::print(out, "{:<18} {}{}\n", p.name, p.description, aliases.empty() ? "" : " (also: " + aliases + ")");
        const ModelSpec& m = p.spec;
        fmt::print(out, "{:<18}   {} layers, hidden {}, {}, ffn {}, seq {}, vocab {}{}; {}\n", "",
                   m.layers, m.hidden, heads_text(m), m.ffn_or_default(), m.seq_len, m.vocab,
                   m.swiglu ? ", swiglu" : "", p.source);
    }
}

void print_named(std::ostream& out, const std::vector<NamedValue>& names) {
    for (const auto& n : names) fmt::print(out, "{:<24} {}\n", n.name, n.description);
}

void print_topologies(std::ostream& out) {
    // One-line meaning of each topology as the network model builds it (hardware_models).
    for (const hw::TopologyKind& k : hw::topology_kinds()) fmt::print(out, "{:<18} {}\n", k.name, k.meaning);
}

void print_keys(std::ostream& out) {
    for (const auto& k : scenario_keys()) {
        const std::string unit = k.unit.empty() ? "" : fmt::format(" [{}]", k.unit);
        fmt::print(out, "{:<38} {}{}; default {}; allowed {}\n", k.key, k.type, unit, k.default_text, k.allowed);
        fmt::print(out, "{:<38}   {}\n", "", k.meaning);
    }
    // Read by `cuboid search` only (search_config.hpp), each list checked like its scenario key.
    fmt::print(out, "{:<38} map; default none; allowed keys {}\n", "search", join(search_section_keys()));
    fmt::print(out, "{:<38}   {}\n", "", "lists that restrict the plans `cuboid search` considers (docs/search.md)");
}

}  // namespace

std::vector<std::string> list_topics() {
    return {"gpus", "nodes", "networks", "topologies", "models", "schedules",
            "recompute", "tensor-modes", "context-modes", "precisions", "keys"};
}

void list_command(const std::string& topic, std::ostream& out) {
    if (topic == "gpus") return print_catalog(out, hw::CatalogSection::Gpus);
    if (topic == "nodes") return print_catalog(out, hw::CatalogSection::Nodes);
    if (topic == "networks") return print_catalog(out, hw::CatalogSection::Networks);
    if (topic == "topologies") return print_topologies(out);
    if (topic == "models") return print_models(out);
    if (topic == "schedules") return print_named(out, schedule_names());
    if (topic == "recompute") {
        print_named(out, recompute_names());
        // What selective recomputation runs again is its modules' choice (parallel.recompute_modules).
        fmt::print(out, "\nmodules of selective (parallel.recompute_modules, default [core_attn]):\n");
        return print_named(out, named_values(recompute_module_table()));
    }
    if (topic == "tensor-modes") return print_named(out, tensor_mode_names());
    if (topic == "context-modes") return print_named(out, context_mode_names());
    if (topic == "precisions") return print_named(out, precision_names());
    if (topic == "keys") return print_keys(out);
    throw InputError({"", 0, "list"}, unknown_name_message("list", topic, list_topics()));
}

}  // namespace cuboid::cli
