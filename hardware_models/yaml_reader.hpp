// Typed, located reading of YAML documents: every value is read through a Reader that knows the
// file and the dotted key it came from, so a wrong type or a missing key becomes an InputError
// naming file, line and key. Unknown keys are not rejected here (the catalog and profile files
// are tolerant of extra keys; strict on the types of the keys they read).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "hardware_models/errors.hpp"

namespace cuboid::hw {

class YamlReader {
public:
    YamlReader(YAML::Node node, std::string file, std::string key);
    // Parses `text` (the contents of `file`); YAML syntax errors become InputError.
    static YamlReader parse(const std::string& text, const std::string& file);

    YamlReader at(const std::string& name) const;                    // required map entry
    std::optional<YamlReader> find(const std::string& name) const;   // optional map entry
    std::vector<YamlReader> items() const;                           // sequence elements
    std::vector<std::pair<std::string, YamlReader>> entries() const; // map entries, in order

    double number() const;
    int integer() const;
    std::string text() const;
    std::vector<std::string> texts() const;  // a sequence of strings

    double number(const std::string& name) const { return at(name).number(); }
    int integer(const std::string& name) const { return at(name).integer(); }
    std::string text(const std::string& name) const { return at(name).text(); }
    std::string text_or(const std::string& name, const std::string& fallback) const;

    bool is_sequence() const { return node_.IsSequence(); }
    bool is_map() const { return node_.IsMap(); }
    const std::string& key() const { return key_; }
    InputLocation where() const;
    [[noreturn]] void fail(const std::string& message) const;

private:
    YAML::Node node_;
    std::string file_;
    std::string key_;
};

}  // namespace cuboid::hw
