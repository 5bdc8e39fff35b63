// Parsing YAML text that a user wrote, with the checks yaml-cpp does not make: the text must be
// UTF-8 (names reach JSON and CSV outputs), a quoted scalar must be closed (yaml-cpp takes an
// unterminated quote on the last line as running to the end of the file), and a map must not
// write one key twice (yaml-cpp keeps both and a lookup silently takes the first). Every file
// format (scenario, study, hardware profile) parses through here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "hardware_models/errors.hpp"

namespace cuboid::hw {

// The documents of `text` (the contents of `file`); every problem above is an InputError naming
// file, line and, where there is one, the key.
std::vector<YAML::Node> load_yaml_documents(const std::string& text, const std::string& file);

// The one document of `text` (null when the text is empty); more than one ('---') is an
// InputError saying that `what` ("a scenario") is one document.
YAML::Node load_yaml_document(const std::string& text, const std::string& file, const std::string& what);

// Throws InputError at `where` when `text` is not valid UTF-8 (for values that come from the
// command line rather than a file).
void check_utf8(std::string_view text, const InputLocation& where);

}  // namespace cuboid::hw
