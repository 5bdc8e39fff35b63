// The catalog files' text, compiled into the library (generated from catalog/*.yaml by CMake, see
// catalog_data.cpp.in) so that the cuboid binary is self-contained.
#pragma once

#include <string_view>

namespace cuboid::hw {

struct BuiltinCatalogText {
    std::string_view gpus;
    std::string_view nodes;
    std::string_view networks;
    std::string_view nccl;
};

BuiltinCatalogText builtin_catalog_text();

}  // namespace cuboid::hw
