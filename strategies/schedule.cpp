#include "strategies/schedule.hpp"

#include <sstream>

namespace cuboid {

std::string step_words(const std::vector<PipelineStep>& steps, bool chunks) {
    std::ostringstream out;
    static constexpr const char* kWord[] = {"F", "Fc", "R", "B", "W"};  // indexed by Pass
    for (const PipelineStep& s : steps) {
        out << (out.tellp() > 0 ? " " : "") << kWord[static_cast<int>(s.pass)] << s.micro;
        if (chunks) out << "." << s.chunk;
    }
    return out.str();
}

}  // namespace cuboid
