#include "hardware_models/yaml_reader.hpp"

#include <cmath>

#include "hardware_models/yaml_text.hpp"

namespace cuboid::hw {

YamlReader::YamlReader(YAML::Node node, std::string file, std::string key)
    : node_(std::move(node)), file_(std::move(file)), key_(std::move(key)) {}

YamlReader YamlReader::parse(const std::string& text, const std::string& file) {
    return YamlReader(load_yaml_document(text, file, "the file"), file, "");
}

InputLocation YamlReader::where() const {
    const int line = node_.Mark().is_null() ? 0 : node_.Mark().line + 1;
    return {file_, line, key_};
}

void YamlReader::fail(const std::string& message) const { throw InputError(where(), message); }

static std::string join_key(const std::string& parent, const std::string& name) {
    return parent.empty() ? name : parent + "." + name;
}

std::optional<YamlReader> YamlReader::find(const std::string& name) const {
    if (!node_.IsMap()) fail("expected a map with key '" + name + "'");
    YAML::Node child = node_[name];
    if (!child.IsDefined() || child.IsNull()) return std::nullopt;
    return YamlReader(child, file_, join_key(key_, name));
}

YamlReader YamlReader::at(const std::string& name) const {
    auto child = find(name);
    if (!child) fail("missing key '" + name + "'");
    return *child;
}

std::vector<YamlReader> YamlReader::items() const {
    if (!node_.IsSequence()) fail("expected a list");
    std::vector<YamlReader> out;
    for (std::size_t i = 0; i < node_.size(); ++i)
        out.emplace_back(node_[i], file_, key_ + "[" + std::to_string(i) + "]");
    return out;
}

std::vector<std::pair<std::string, YamlReader>> YamlReader::entries() const {
    if (!node_.IsMap()) fail("expected a map");
    std::vector<std::pair<std::string, YamlReader>> out;
    for (const auto& kv : node_) {
        if (!kv.first.IsScalar()) YamlReader(kv.first, file_, key_).fail("a key must be a plain name, not a list or map");
        const auto name = kv.first.Scalar();
        out.emplace_back(name, YamlReader(kv.second, file_, join_key(key_, name)));
    }
    return out;
}

double YamlReader::number() const {
    if (!node_.IsScalar()) fail("expected a number");
    try {
        const double v = node_.as<double>();
        if (!std::isfinite(v)) fail("expected a finite number");
        return v;
    } catch (const YAML::Exception&) {
        fail("expected a number, got '" + node_.Scalar() + "'");
    }
}

int YamlReader::integer() const {
    if (!node_.IsScalar()) fail("expected an integer");
    try {
        return node_.as<int>();
    } catch (const YAML::Exception&) {
        fail("expected an integer, got '" + node_.Scalar() + "'");
    }
}

std::string YamlReader::text() const {
    if (!node_.IsScalar()) fail("expected a string");
    return node_.Scalar();
}

std::vector<std::string> YamlReader::texts() const {
    std::vector<std::string> out;
    for (const auto& item : items()) out.push_back(item.text());
    return out;
}

std::string YamlReader::text_or(const std::string& name, const std::string& fallback) const {
    auto child = find(name);
    return child ? child->text() : fallback;
}

}  // namespace cuboid::hw
