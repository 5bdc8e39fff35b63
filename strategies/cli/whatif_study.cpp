#include "strategies/cli/whatif_study.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "hardware_models/catalog.hpp"
#include "hardware_models/economics.hpp"
#include "hardware_models/input_file.hpp"
#include "hardware_models/physical_limits.hpp"
#include "hardware_models/yaml_text.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/cli/search_config.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/cli/value_parse.hpp"
#include "strategies/framework.hpp"
#include "strategies/training_cost.hpp"

namespace cuboid::cli {
namespace {

class StudyReader {
public:
    StudyReader(std::string file, const NameResolvers& names)
        : file_(std::move(file)), ctx_{names, std::filesystem::path(file_).parent_path()} {}

    InputLocation at(const std::string& key, const YAML::Node& node) const {
        return {file_, node.Mark().line >= 0 ? node.Mark().line + 1 : 0, key};
    }

    // A scenario key (dotted) set from a scalar of the study, errors at the study's own key.
    void set(Scenario& s, const std::string& scenario_key, const YAML::Node& value, const InputLocation& w) const {
        const KeyDef* def = find_key(scenario_key);
        if (!def || !def->set) throw InputError(w, "not a key of a study entry");
        if (!value.IsScalar()) throw InputError(w, fmt::format("expected a single {} ({})", def->type, def->allowed));
        def->set(s, value.Scalar(), w, ctx_);
    }

    YAML::Node required_list(const YAML::Node& root, const std::string& key) const {
        const YAML::Node list = root[key];
        if (!list.IsDefined() || list.IsNull())
            throw InputError({file_, 0, key}, fmt::format("missing: a study needs a non-empty {} list", key));
        if (!list.IsSequence() || list.size() == 0)
            throw InputError(at(key, list), fmt::format("expected a non-empty list of {}", key));
        return list;
    }

    const std::string& file() const { return file_; }

private:
    std::string file_;
    SetContext ctx_;
};

std::string entry_name(const YAML::Node& entry, const InputLocation& w) {
    const YAML::Node name = entry["name"];
    if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty())
        throw InputError(w, "missing: name (a short label for the tables)");
    return name.Scalar();
}

constexpr const char* kClusterKeys[] = {"name", "gpu", "nodes", "gpus_per_node", "scale_up_domain", "intra_node", "intra_node_gbps",
                                        "inter_node", "profile", "gpu_hour_usd", "node_power_kw", "gpu_power_w",
                                        "node_overhead_w", "gpu_purchase_usd", "host_memory_gb_per_s"};
constexpr const char* kModelKeys[] = {"name", "preset", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden",
                                      "seq_len", "vocab", "swiglu", "experts", "experts_per_token",
                                      "expert_ffn_hidden", "shared_experts", "dense_layers", "moe_load_imbalance",
                                      "attention_kind", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                      "qk_rope_head_dim", "v_head_dim", "mtp_layers", "optimizer_offload",
                                      "attention", "attention_dropout", "hidden_dropout",
                                      "attention_mask", "tokens", "global_batch", "precision", "framework",
                                      "transformer_engine", "fp8_recipe", "grad_precision"};

template <std::size_t N>
std::vector<std::string> words(const char* const (&keys)[N]) {
    return {std::begin(keys), std::end(keys)};
}

double read_power_w(const YAML::Node& v, const InputLocation& w) {
    if (!v.IsScalar()) throw InputError(w, "expected a number of watts");
    return number_between(v.Scalar(), w, 0.0, hw::limits::kMaxGpuPowerWatts);
}

void set_power(StudyCluster& c, const YAML::Node& e, const std::string& key, const StudyReader& r,
               const hw::Catalog& catalog) {
    if (e["node_power_kw"].IsDefined()) {
        c.node_power_kw = *c.settings.cost.node_power_kw;
        c.power_source = "node_power_kw of the study";
        return;
    }
    const int per_node = c.settings.cluster.gpus_per_node;
    double gpu_w = catalog.gpu(c.settings.cluster.gpu).tdp_watts;
    if (!e["gpu_power_w"].IsDefined() && !e["node_overhead_w"].IsDefined()) {
        // No power given: the catalog's cited system power at load, scaled to the node's GPUs
        // (resolve_cost_inputs, as `cuboid run` takes it); else the GPUs' TDP alone, said so.
        const CostInputs in = resolve_cost_inputs(c.settings, hw::Economics::builtin());
        if (in.node_power_kw) {
            c.node_power_kw = in.node_power_kw->value;
            c.power_source = in.node_power_kw->source;
            c.power_from_catalog = true;
            c.settings.cost.node_power_kw = c.node_power_kw;
            return;
        }
        c.power_source = fmt::format("{} x {} W (catalog TDP; no system power for {} in the catalog: the rest of "
                                     "the node left out, set node_overhead_w)",
                                     per_node, gpu_w, c.settings.cluster.gpu);
        c.power_from_catalog = true;
        c.node_power_kw = per_node * gpu_w / 1000.0;
        c.settings.cost.node_power_kw = c.node_power_kw;
        return;
    }
    c.power_source = fmt::format("{} x {} W (catalog TDP)", per_node, gpu_w);
    if (const YAML::Node v = e["gpu_power_w"]; v.IsDefined()) {
        gpu_w = read_power_w(v, r.at(key + ".gpu_power_w", v));
        c.power_source = fmt::format("{} x {} W (gpu_power_w of the study)", per_node, gpu_w);
    }
    double overhead_w = 0.0;
    if (const YAML::Node v = e["node_overhead_w"]; v.IsDefined()) {
        overhead_w = read_power_w(v, r.at(key + ".node_overhead_w", v));
        c.power_source += fmt::format(" + {} W node overhead", overhead_w);
    }
    c.node_power_kw = (per_node * gpu_w + overhead_w) / 1000.0;
    c.settings.cost.node_power_kw = c.node_power_kw;
}

StudyCluster read_cluster(const YAML::Node& e, const std::string& key, const StudyReader& r,
                          const hw::Catalog& catalog) {
    if (!e.IsMap()) throw InputError(r.at(key, e), "expected a map (name, gpu, nodes, ...)");
    StudyCluster c;
    c.name = entry_name(e, r.at(key, e));
    c.settings.source_file = r.file();
    for (auto it = e.begin(); it != e.end(); ++it) {
        const std::string k = it->first.Scalar();
        const YAML::Node v = it->second;
        const InputLocation w = r.at(key + "." + k, it->first);
        if (k == "name" || k == "gpu_power_w" || k == "node_overhead_w") continue;
        if (k == "inter_node" && v.IsMap()) {
            for (auto sub = v.begin(); sub != v.end(); ++sub)
                r.set(c.settings, "cluster.inter_node." + sub->first.Scalar(), sub->second,
                      r.at(w.key + "." + sub->first.Scalar(), sub->first));
        } else if (k == "gpu_hour_usd" || k == "node_power_kw" || k == "gpu_purchase_usd") {
            r.set(c.settings, "cost." + k, v, w);
        } else if (std::find(std::begin(kClusterKeys), std::end(kClusterKeys), k) != std::end(kClusterKeys)) {
            r.set(c.settings, "cluster." + k, v, w);
        } else {
            throw InputError(w, unknown_name_message("cluster key", k, words(kClusterKeys)));
        }
    }
    if (!e["gpu"].IsDefined()) throw InputError(r.at(key, e), "missing: gpu (`cuboid list gpus`)");
    // Without a price of its own the cluster takes the catalog's cited cloud price of its GPU.
    const hw::GpuEconomics* economics = hw::Economics::builtin().find(c.settings.cluster.gpu);
    if (c.settings.cost.gpu_hour_usd)
        c.gpu_hour_usd = *c.settings.cost.gpu_hour_usd;
    else if (economics && economics->cloud_usd_per_gpu_hour)
        c.gpu_hour_usd = economics->cloud_usd_per_gpu_hour->value;
    else
        throw InputError(r.at(key, e), fmt::format("missing: gpu_hour_usd (the catalog has no cloud price for {}; "
                                                   "give a price per GPU-hour in USD, with its source)",
                                                   c.settings.cluster.gpu));
    set_power(c, e, key, r, catalog);
    return c;
}

StudyModel read_model(const YAML::Node& e, const std::string& key, const StudyReader& r) {
    if (!e.IsMap()) throw InputError(r.at(key, e), "expected a map (name, preset, tokens, global_batch, ...)");
    StudyModel m;
    m.name = entry_name(e, r.at(key, e));
    m.settings.source_file = r.file();
    // The preset first, so that the explicit model keys beside it override it.
    if (const YAML::Node p = e["preset"]; p.IsDefined()) r.set(m.settings, "model.preset", p, r.at(key + ".preset", p));
    for (auto it = e.begin(); it != e.end(); ++it) {
        const std::string k = it->first.Scalar();
        const InputLocation w = r.at(key + "." + k, it->first);
        if (k == "name" || k == "preset") continue;
        if (std::find(std::begin(kModelKeys), std::end(kModelKeys), k) == std::end(kModelKeys))
            throw InputError(w, unknown_name_message("model key", k, words(kModelKeys)));
        const bool training = k == "tokens" || k == "global_batch" || k == "precision" || k == "framework" ||
                              k == "transformer_engine" || k == "fp8_recipe" || k == "grad_precision" ||
                              k == "optimizer_offload";
        r.set(m.settings, (training ? "training." : "model.") + k, it->second, w);
    }
    if (!m.settings.training.tokens)
        throw InputError(r.at(key + ".tokens", e), "missing: the token budget to train on (e.g. 2e12)");
    if (m.settings.training.global_batch <= 0)
        throw InputError(r.at(key + ".global_batch", e), "missing: sequences per iteration");
    try {
        check_complete(m.settings);
    } catch (const InputError& missing) {
        const std::string& k = missing.where().key;
        throw relocated(missing, r.at(key + "." + k.substr(k.rfind('.') + 1), e));
    }
    return m;
}

void check_top_keys(const YAML::Node& root, const StudyReader& r) {
    const std::vector<std::string> allowed{"name", "pue", "search", "clusters", "models"};
    for (auto it = root.begin(); it != root.end(); ++it)
        if (std::find(allowed.begin(), allowed.end(), it->first.Scalar()) == allowed.end())
            throw InputError(r.at(it->first.Scalar(), it->first),
                             unknown_name_message("study key", it->first.Scalar(), allowed));
}

}  // namespace

Study load_study_text(const std::string& text, const std::string& file, const NameResolvers& names) {
    const YAML::Node root = hw::load_yaml_document(text, file, "a study");
    if (!root.IsMap()) throw InputError({file, 0, ""}, "expected a map with keys name, pue, search, clusters, models");
    const StudyReader r(file, names);
    check_top_keys(root, r);
    const hw::Catalog catalog = hw::Catalog::load_builtin();
    Study s;
    s.source_file = file;
    // IsDefined first: a missing key of a const node is invalid for every other question.
    const YAML::Node name = root["name"];
    if (name.IsDefined() && !name.IsNull() && !name.IsScalar())
        throw InputError(r.at("name", name), "expected a short label, not a list or map");
    s.name = name.IsDefined() && name.IsScalar() && !name.Scalar().empty() ? name.Scalar()
                                                                          : std::filesystem::path(file).stem().string();
    if (const YAML::Node p = root["pue"]; p.IsDefined()) {
        s.pue = number_between(p.IsScalar() ? p.Scalar() : "", r.at("pue", p), 1.0, hw::limits::kMaxPue);
        s.pue_given = true;
        s.pue_source = "pue in " + file;
    } else {
        s.pue = hw::Economics::builtin().defaults.pue.value;
        s.pue_source = hw::Economics::builtin().defaults.pue.source;
    }
    if (const YAML::Node search = root["search"]; search.IsDefined()) s.search = search;
    const YAML::Node clusters = r.required_list(root, "clusters");
    for (std::size_t i = 0; i < clusters.size(); ++i)
        s.clusters.push_back(read_cluster(clusters[i], fmt::format("clusters[{}]", i), r, catalog));
    const YAML::Node models = r.required_list(root, "models");
    for (std::size_t i = 0; i < models.size(); ++i)
        s.models.push_back(read_model(models[i], fmt::format("models[{}]", i), r));
    if (s.search.IsDefined() && !s.search.IsNull()) {
        SearchSpace check;  // the section's errors now, before any search runs
        read_search_section(s.search, file, "search", check);
    }
    return s;
}

Study load_study_file(const std::string& path, const NameResolvers& names) {
    return load_study_text(read_input_file(path, kMaxYamlFileBytes, "study file"), path, names);
}

Scenario pair_scenario(const Study& study, const StudyCluster& cluster, const StudyModel& model) {
    Scenario s;
    s.name = cluster.name + "/" + model.name;
    s.source_file = study.source_file;
    s.model = model.settings.model;
    s.training = model.settings.training;
    s.cluster = cluster.settings.cluster;
    s.cost = cluster.settings.cost;
    s.stack = model.settings.stack;
    apply_framework(s);
    return s;
}

SearchSpace pair_space(const Study& study, const Scenario& pair) {
    SearchSpace space = default_search_space(pair);
    if (study.search.IsDefined() && !study.search.IsNull())
        read_search_section(study.search, study.source_file, "search", space);
    return space;
}

}  // namespace cuboid::cli
