#include "strategies/cli/output_target.hpp"

namespace cuboid::cli {

OutputTarget::OutputTarget(const std::optional<std::string>& path, std::ostream& standard_output)
    : given_(path.has_value()), standard_output_(standard_output) {
    if (path && *path != "-") file_.emplace(*path);
}

std::ostream& OutputTarget::stream() { return file_ ? file_->stream() : standard_output_; }

void OutputTarget::commit() {
    if (file_) file_->commit();
}

}  // namespace cuboid::cli
