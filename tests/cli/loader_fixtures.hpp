// Shared pieces of the command-line tests: name lookups that stand in for the model presets and
// the GPU catalog, and a way to catch the InputError a call throws.
#pragma once

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "hardware_models/errors.hpp"
#include "strategies/cli/scenario_keys.hpp"

namespace cuboid::cli::test {

// A preset lookup that fails as the real one does: no file, the key, the known names.
inline NameResolvers fake_names() {
    NameResolvers n;
    n.model_preset = [](const std::string& name) {
        if (name != "tiny") throw InputError({"", 0, "model.preset"}, "unknown model preset '" + name + "'; known: tiny");
        ModelSpec m;
        m.layers = 4;
        m.hidden = 256;
        m.heads = 4;
        m.seq_len = 128;
        m.vocab = 1000;
        return m;
    };
    n.gpu_name = [](const std::string& gpu) {
        if (gpu == "a100") return std::string("a100-sxm-80gb");  // an alias
        if (gpu != "a100-sxm-80gb") throw InputError({"", 0, "cluster.gpu"}, "unknown GPU '" + gpu + "'; known: a100-sxm-80gb");
        return gpu;
    };
    return n;
}

template <class F>
InputError input_error_of(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e;
    }
    FAIL("expected an InputError");
    throw std::logic_error("unreachable");
}

// The message names the file, the line and the key, in the form "file:line: 'key': ...".
inline void check_located(const InputError& e, const std::string& file, int line, const std::string& key) {
    INFO(e.what());
    CHECK(e.where().file == file);
    CHECK(e.where().line == line);
    CHECK(e.where().key == key);
    const std::string head = line > 0 ? file + ":" + std::to_string(line) : file;
    CHECK(std::string(e.what()).find(head) != std::string::npos);
    CHECK(std::string(e.what()).find("'" + key + "'") != std::string::npos);
}

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace cuboid::cli::test
