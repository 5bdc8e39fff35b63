// A what-if study (docs/search.md): clusters to compare (GPU, size, network, price per GPU-hour,
// power) and models with a token budget. Each (cluster, model) pair becomes a scenario whose best
// plan `cuboid whatif` searches. Cluster and model keys are the scenario's (same checks); every
// error names the study file, the line and the key ("clusters[2].gpu").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "strategies/cli/scenario_keys.hpp"
#include "strategies/cli/search_space.hpp"

namespace cuboid::cli {

struct StudyCluster {
    std::string name;
    Scenario settings;         // cluster.* and cost.* keys set; the rest default
    double gpu_hour_usd = 0.0;  // the study's, else the catalog's cloud price of the GPU
    // Power of one node while training: node_power_kw; or gpus_per_node x GPU power (gpu_power_w,
    // default the catalog's TDP) + the node's other parts (CPUs, memory, NICs, fans:
    // node_overhead_w); with none of them, the catalog's system power (economics.yaml) per GPU x
    // gpus_per_node, else the GPUs' TDP alone.
    double node_power_kw = 0.0;
    std::string power_source;  // how node_power_kw was obtained, for the report
    bool power_from_catalog = false;  // no power key in the study: the catalog's figure and source
};

struct StudyModel {
    std::string name;
    Scenario settings;         // model.* and training.* keys set
};

struct Study {
    std::string name;
    std::string source_file;
    // Facility power / IT power: energy is IT energy x pue, for the energy column and the owned
    // cost alike. Default: the catalog's cited industry average (economics.yaml).
    double pue = 1.0;
    bool pue_given = false;    // the study sets pue
    std::string pue_source;    // "pue in FILE", or the catalog default's source
    std::vector<StudyCluster> clusters;
    std::vector<StudyModel> models;
    YAML::Node search;         // the study's `search:` section, for every pair; may be undefined
};

Study load_study_file(const std::string& path, const NameResolvers& names);
Study load_study_text(const std::string& text, const std::string& file, const NameResolvers& names);

// The scenario of one pair: the model's keys and the cluster's, named "<cluster>/<model>".
Scenario pair_scenario(const Study& study, const StudyCluster& cluster, const StudyModel& model);

// The search space of one pair: its defaults with the study's `search:` lists in place.
SearchSpace pair_space(const Study& study, const Scenario& pair);

}  // namespace cuboid::cli
