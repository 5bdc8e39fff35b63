#include "validate/report/figures.hpp"

#include <fstream>

#include "hardware_models/errors.hpp"

namespace cuboid::validate {
namespace {

template <class T>
T get(const nlohmann::json& j, const char* key, const std::string& file) {
    if (!j.contains(key)) throw InputError({file, 0, key}, "missing in the measured file");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw InputError({file, 0, key}, std::string("wrong type: ") + e.what());
    }
}

}  // namespace

nlohmann::json to_json(const Figures& m) {
    nlohmann::json ops = nlohmann::json::array();
    for (const OpSample& s : m.ops) ops.push_back({{"rank", s.rank}, {"op", s.op}, {"seconds", s.seconds}});
    const PartTimes& b = m.breakdown;
    return {{"tool", "cuboid-validate"},
            {"device", m.device},
            {"gpus", m.gpus},
            {"iteration_time_s", m.iteration_time_s},
            {"iteration_times_s", m.iteration_times_s},
            {"peak_memory_bytes", m.peak_memory_bytes},
            {"op_kind_seconds", m.op_kind_seconds},
            {"breakdown",
             {{"compute_s", b.compute_s}, {"recompute_s", b.recompute_s}, {"tp_comm_exposed_s", b.tp_comm_exposed_s},
              {"pp_comm_exposed_s", b.pp_comm_exposed_s}, {"dp_comm_exposed_s", b.dp_comm_exposed_s},
              {"bubble_s", b.bubble_s}}},
            {"ops", ops},
            {"notes", m.notes}};
}

Figures figures_from_json(const nlohmann::json& j, const std::string& file) {
    if (!j.is_object()) throw InputError({file, 0, ""}, "a measured file is a JSON object");
    Figures m;
    m.device = j.value("device", "");
    m.gpus = get<int>(j, "gpus", file);
    m.iteration_time_s = get<double>(j, "iteration_time_s", file);
    if (!(m.iteration_time_s > 0.0)) throw InputError({file, 0, "iteration_time_s"}, "must be positive");
    m.iteration_times_s = j.value("iteration_times_s", std::vector<double>{});
    m.peak_memory_bytes = get<double>(j, "peak_memory_bytes", file);
    m.op_kind_seconds = j.value("op_kind_seconds", std::map<std::string, double>{});
    if (j.contains("breakdown")) {
        const auto& b = j.at("breakdown");
        PartTimes& d = m.breakdown;
        d.compute_s = get<double>(b, "compute_s", file);
        d.recompute_s = get<double>(b, "recompute_s", file);
        d.tp_comm_exposed_s = get<double>(b, "tp_comm_exposed_s", file);
        d.pp_comm_exposed_s = get<double>(b, "pp_comm_exposed_s", file);
        d.dp_comm_exposed_s = get<double>(b, "dp_comm_exposed_s", file);
        d.bubble_s = get<double>(b, "bubble_s", file);
    }
    if (j.contains("ops"))
        for (const auto& o : j.at("ops"))
            m.ops.push_back({get<std::uint32_t>(o, "rank", file), get<std::uint32_t>(o, "op", file),
                             get<double>(o, "seconds", file)});
    m.notes = j.value("notes", std::vector<std::string>{});
    return m;
}

Figures read_figures_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError({path, 0, ""}, "cannot read the measured file");
    nlohmann::json j;
    try {
        in >> j;
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError({path, 0, ""}, std::string("not valid JSON: ") + e.what());
    }
    return figures_from_json(j, path);
}

}  // namespace cuboid::validate
