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

// Every part under its key with "_s" ("tp_comm_exposed_s").
nlohmann::json breakdown_json(const PartTimes& b) {
    nlohmann::json j = nlohmann::json::object();
    for (const BreakdownPart& part : breakdown_parts()) j[std::string(part.key) + "_s"] = b.*part.seconds;
    return j;
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
            {"breakdown", breakdown_json(b)},
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
        for (const BreakdownPart& part : breakdown_parts()) {
            const std::string key = std::string(part.key) + "_s";
            // The parts of axes most plans lack came later: a file without them measured none.
            if (!part.always_shown && !b.contains(key)) continue;
            m.breakdown.*part.seconds = get<double>(b, key.c_str(), file);
        }
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
