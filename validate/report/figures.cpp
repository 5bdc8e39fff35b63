#include "validate/report/figures.hpp"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <type_traits>

#include "hardware_models/errors.hpp"

namespace cuboid::validate {
namespace {

template <class T>
T get(const nlohmann::json& j, const char* key, const std::string& file) {
    if (!j.contains(key)) throw InputError({file, 0, key}, "missing in the measured file");
    const nlohmann::json& v = j.at(key);
    // Whole numbers only, in T's range: a float or an out-of-range number would convert with
    // undefined behaviour or wrap.
    if constexpr (std::is_integral_v<T>) {
        constexpr auto lo = std::int64_t(std::numeric_limits<T>::min());
        constexpr auto hi = std::uint64_t(std::numeric_limits<T>::max());
        const bool in_range = v.is_number_unsigned() ? v.get<std::uint64_t>() <= hi
                                                     : v.is_number_integer() && v.get<std::int64_t>() >= lo &&
                                                           v.get<std::int64_t>() <= std::int64_t(hi);
        if (!in_range)
            throw InputError({file, 0, key}, "must be a whole number from " + std::to_string(std::numeric_limits<T>::min()) +
                                                 " to " + std::to_string(std::numeric_limits<T>::max()));
    }
    try {
        return v.get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw InputError({file, 0, key}, std::string("wrong type: ") + e.what());
    }
}

// An optional key: `fallback` when absent, else its value, which must have type T.
template <class T>
T get_or(const nlohmann::json& j, const char* key, T fallback, const std::string& file) {
    return j.contains(key) ? get<T>(j, key, file) : fallback;
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
    m.device = get_or<std::string>(j, "device", "", file);
    m.gpus = get<int>(j, "gpus", file);
    if (m.gpus < 1) throw InputError({file, 0, "gpus"}, "must be at least 1");
    m.iteration_time_s = get<double>(j, "iteration_time_s", file);
    if (!(m.iteration_time_s > 0.0)) throw InputError({file, 0, "iteration_time_s"}, "must be positive");
    m.iteration_times_s = get_or<std::vector<double>>(j, "iteration_times_s", {}, file);
    m.peak_memory_bytes = get<double>(j, "peak_memory_bytes", file);
    m.op_kind_seconds = get_or<std::map<std::string, double>>(j, "op_kind_seconds", {}, file);
    if (j.contains("breakdown")) {
        const auto& b = j.at("breakdown");
        if (!b.is_object()) throw InputError({file, 0, "breakdown"}, "must be an object of seconds per part");
        for (const BreakdownPart& part : breakdown_parts()) {
            const std::string key = std::string(part.key) + "_s";
            // The parts of axes most plans lack came later: a file without them measured none.
            if (!part.always_shown && !b.contains(key)) continue;
            m.breakdown.*part.seconds = get<double>(b, key.c_str(), file);
        }
    }
    if (j.contains("ops")) {
        const auto& ops = j.at("ops");
        if (!ops.is_array()) throw InputError({file, 0, "ops"}, "must be an array of {rank, op, seconds}");
        for (const auto& o : ops) {
            if (!o.is_object()) throw InputError({file, 0, "ops"}, "each entry is an object {rank, op, seconds}");
            m.ops.push_back({get<std::uint32_t>(o, "rank", file), get<std::uint32_t>(o, "op", file),
                             get<double>(o, "seconds", file)});
        }
    }
    m.notes = get_or<std::vector<std::string>>(j, "notes", {}, file);
    return m;
}

Figures figures_from_text(const std::string& text, const std::string& file) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number past double's range
        throw InputError({file, 0, ""}, std::string("not valid JSON: ") + e.what());
    }
    return figures_from_json(j, file);
}

Figures read_figures_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError({path, 0, ""}, "cannot read the measured file");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return figures_from_text(text, path);
}

}  // namespace cuboid::validate
