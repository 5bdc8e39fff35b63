#include "strategies/scenario.hpp"

namespace cuboid {

InputLocation Scenario::where(const std::string& key) const {
    const auto it = key_lines.find(key);
    return InputLocation{source_file, it == key_lines.end() ? 0 : it->second, key};
}

std::string to_string(Schedule s) {
    switch (s) {
        case Schedule::GPipe: return "gpipe";
        case Schedule::OneFOneB: return "1f1b";
        case Schedule::Interleaved: return "interleaved";
        case Schedule::ShiftedCriticalPath: return "shifted-critical-path";
        case Schedule::ZeroBubbleH1: return "zb-h1";
        case Schedule::ZeroBubbleV: return "zb-v";
    }
    return "?";
}

std::string to_string(Recompute r) {
    switch (r) {
        case Recompute::None: return "none";
        case Recompute::Full: return "full";
        case Recompute::Selective: return "selective";
        case Recompute::StageAware: return "stage-aware";
    }
    return "?";
}

std::string to_string(TensorMode m) {
    switch (m) {
        case TensorMode::OneD: return "1d";
        case TensorMode::TwoD: return "2d";
        case TensorMode::ThreeD: return "3d";
        case TensorMode::Atp: return "atp";
    }
    return "?";
}

std::string to_string(ContextMode m) {
    switch (m) {
        case ContextMode::Ring: return "ring";
        case ContextMode::AllGather: return "all-gather";
        case ContextMode::AllToAll: return "all-to-all";
    }
    return "?";
}

std::string to_string(AttentionKind k) { return k == AttentionKind::Mla ? "mla" : "mha"; }

}  // namespace cuboid
