#include "strategies/cli/enum_names.hpp"

#include "hardware_models/catalog.hpp"
#include "hardware_models/topology_kinds.hpp"
#include "strategies/cli/error_location.hpp"
#include "strategies/cli/suggest.hpp"
#include "strategies/names.hpp"

namespace cuboid::cli {
namespace {

std::vector<std::string> words_of(const std::vector<NamedValue>& named) {
    std::vector<std::string> out;
    for (const auto& n : named) out.push_back(n.name);
    return out;
}

template <class E>
std::vector<std::string> words_of(std::initializer_list<E> values) {
    std::vector<std::string> out;
    for (const E v : values) out.emplace_back(hw::to_string(v));
    return out;
}

}  // namespace

InputError with_suggestion(const InputError& e, std::string_view word, std::span<const std::string> allowed) {
    const std::string hint = did_you_mean(word, allowed);
    if (hint.empty()) return e;
    return InputError(e.where(), bare_message(e) + hint);
}

std::vector<std::string> schedule_words() { return words_of(schedule_names()); }
std::vector<std::string> recompute_words() { return words_of(recompute_names()); }
std::vector<std::string> tensor_mode_words() { return words_of(tensor_mode_names()); }
std::vector<std::string> precision_words() { return words_of(precision_names()); }
std::vector<std::string> context_mode_words() { return words_of(context_mode_names()); }
std::vector<std::string> fp8_recipe_words() { return words_of(fp8_recipe_names()); }

std::vector<std::string> intra_node_words() {
    using hw::IntraNodeKind;
    return words_of({IntraNodeKind::NvSwitch, IntraNodeKind::NvLinkMesh, IntraNodeKind::Pcie});
}

std::vector<std::string> inter_node_words() {
    using hw::InterNodeKind;
    return words_of({InterNodeKind::InfiniBand, InterNodeKind::Roce, InterNodeKind::Ethernet});
}

std::vector<std::string> topology_words() {
    std::vector<std::string> words;
    for (const hw::TopologyKind& k : hw::topology_kinds()) words.emplace_back(k.name);
    return words;
}

}  // namespace cuboid::cli
